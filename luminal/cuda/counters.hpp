#pragma once
// The counters of a device's plans (internal to luminal/cuda). Each event is counted here and
// nowhere else: the graph executor's (GraphStats, over every plan of the device) and cuBLASLt's
// (LtStats: a plan's LtCounts adds each event to the plan's counts and to the device's totals).
// Example: examples/snippets/cuda/counters.cpp (two plans' prepares in the device's totals).
#include <atomic>
#include <cstdint>

#include "luminal/cuda/options.hpp"

namespace luminal::cuda {

/// The graph executor's counters over every plan of a device (CudaBackend::graph_stats).
class GraphCounters {
 public:
  void instantiated() { ++instantiations_; }
  void reinstantiated() { ++reinstantiations_; }
  void node_updated() { ++node_updates_; }
  /// One graph launch, `launch_ns` its host time; with `dims_copied`, `dims_ns` the host time of
  /// the execute before it (the dims copy and the cuBLASLt steps' refresh).
  void launched(uint64_t launch_ns, bool dims_copied, uint64_t dims_ns) {
    ++launches_;
    if (dims_copied) {
      ++dims_copies_;
      dims_host_ns_ += dims_ns;
    }
    launch_host_ns_ += launch_ns;
  }
  GraphStats stats() const {
    return GraphStats{instantiations_.load(),   launches_.load(),    node_updates_.load(),
                      reinstantiations_.load(), dims_copies_.load(), dims_host_ns_.load(),
                      launch_host_ns_.load()};
  }

 private:
  std::atomic<uint64_t> instantiations_{0}, launches_{0}, node_updates_{0}, reinstantiations_{0};
  std::atomic<uint64_t> dims_copies_{0}, dims_host_ns_{0}, launch_host_ns_{0};
};

/// cuBLASLt counters over every plan of a device (CudaBackend::lt_stats): counted through each
/// plan's LtCounts, and the host time of graph executes spent on cuBLASLt steps.
class LtTotals {
 public:
  /// Host time of one graph execute: specs resolved (with prepares), islands refreshed.
  void host_time(uint64_t resolve_ns, uint64_t refresh_ns) {
    resolve_host_ns_ += resolve_ns;
    refresh_host_ns_ += refresh_ns;
  }
  LtStats stats() const {
    return LtStats{.prepares = prepares_.load(),
                   .captures = captures_.load(),
                   .recaptures = recaptures_.load(),
                   .in_place = in_place_.load(),
                   .calls = calls_.load(),
                   .algo_kept = algo_kept_.load(),
                   .stream_runs = stream_runs_.load(),
                   .resolve_host_ns = resolve_host_ns_.load(),
                   .refresh_host_ns = refresh_host_ns_.load()};
  }

 private:
  friend class LtCounts;
  std::atomic<uint64_t> prepares_{0}, captures_{0}, recaptures_{0}, calls_{0}, in_place_{0},
      algo_kept_{0}, stream_runs_{0}, resolve_host_ns_{0}, refresh_host_ns_{0};
};

/// One plan's cuBLASLt counters: each event counted for the plan and for the device's totals.
class LtCounts {
 public:
  explicit LtCounts(LtTotals& device) : device_(device) {}
  /// A prepare (LtPrepared built); `kept`: it kept the step's algorithm.
  void prepared(bool kept) {
    ++plan_.prepares;
    ++device_.prepares_;
    if (kept) {
      ++plan_.algo_kept;
      ++device_.algo_kept_;
    }
  }
  /// A call captured into a graph; `again`: the island was captured before; `in_place`: as the
  /// same kernels, their parameters set on the island's nodes.
  void captured(bool again, bool in_place) {
    ++plan_.captures;
    ++device_.captures_;
    if (again) {
      ++plan_.recaptures;
      ++device_.recaptures_;
    }
    if (in_place) {
      ++plan_.in_place;
      ++device_.in_place_;
    }
  }
  /// A graph-executor execute run on the stream at new dims (CudaOptions::NewDims::Stream).
  void ran_on_stream() {
    ++plan_.stream_runs;
    ++device_.stream_runs_;
  }
  /// A call enqueued on a stream.
  void called() {
    ++plan_.calls;
    ++device_.calls_;
  }
  const LtStats& plan() const { return plan_; }

 private:
  LtTotals& device_;
  LtStats plan_;
};

}  // namespace luminal::cuda

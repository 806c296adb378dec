#include "luminal/program/backend.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "luminal/core/error.hpp"

namespace luminal {

namespace {

std::string seconds(double s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g s", s);
  return buf;
}

}  // namespace

PlanIo PlanIo::of(const LlirGraph& g) {
  PlanIo io;
  std::vector<int> input_index(g.nodes.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const LlirNode& n = g.nodes[i];
    if (is_op(n.op, OpKind::Input)) {
      input_index[i] = static_cast<int>(io.inputs.size());
      io.inputs.push_back(n.attrs.label);
    }
  }
  for (const LlirNode& n : g.nodes) {
    if (!is_op(n.op, OpKind::Output)) continue;
    io.outputs.push_back(n.attrs.label);
    // Follow in-place updates back to the buffer they write (never into an Output's buffer).
    int src = n.inputs.at(0), root = src;
    while (g.nodes[root].op->inplace_input >= 0) {
      const int next = g.nodes[root].inputs.at(g.nodes[root].op->inplace_input);
      if (is_op(g.nodes[next].op, OpKind::Output)) break;
      root = next;
    }
    const bool in_place = root != src && input_index[root] >= 0 &&
                          n.attrs.views.at(0).is_contiguous() &&
                          numel(n.attrs.shape) == numel(g.nodes[root].attrs.shape);
    io.output_in_input.push_back(in_place ? input_index[root] : -1);
  }
  return io;
}

Buffer Backend::wrap_host(const void*, uint64_t) { return {}; }

void Backend::check_external(const void*, uint64_t) const {}

void Backend::start_download(void* dst, Buffer src, uint64_t offset, uint64_t bytes, Queue* queue) {
  download(dst, src, offset, bytes, queue);
}

void Backend::finish_download(Queue*) {}

void Backend::wait_external(void*, Queue*) {}

void Backend::signal_external(void*, Queue*) {}

std::unique_ptr<Queue> Backend::make_queue() { return nullptr; }

std::string Backend::profile_text(Plan&, const int64_t*) { return {}; }

const OpDef* Backend::op_named(std::string_view name) const {
  for (int k = 0; k <= static_cast<int>(OpKind::Output); ++k) {
    const OpDef* op = hlir_op(static_cast<OpKind>(k));
    if (op->name == name) return op;
  }
  return nullptr;
}

std::shared_ptr<const Payload> Backend::read_payload(std::string_view kind,
                                                     std::string_view) const {
  throw Error("backend '" + this->name() + "' has no payload kind '" + std::string(kind) + "'");
}

std::vector<double> Backend::timed_runs(Plan& plan, int parity, const int64_t* dims, int min_runs,
                                        int max_runs, double min_total_s, double timeout_s,
                                        const int64_t* alt) {
  min_runs = std::max(min_runs, 1);
  max_runs = std::max(max_runs, min_runs);
  int runs = 0;
  auto run = [&] {
    const int64_t* at = alt && runs++ % 2 == 1 ? alt : dims;
    const auto start = std::chrono::steady_clock::now();
    plan.execute(parity, at);
    sync();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const double warm = run();
  if (timeout_s > 0 && warm > timeout_s) {
    throw Error("profile: the warm-up run took " + seconds(warm) + ", over the timeout of " +
                seconds(timeout_s));
  }
  if (give_up_s_ > 0 && warm > give_up_s_) return {warm};
  std::vector<double> times;
  times.reserve(static_cast<size_t>(min_runs));
  double total = 0;
  for (int t = 0; t < max_runs && (t < min_runs || total < min_total_s); ++t) {
    const double s = run();
    if (timeout_s > 0 && s > timeout_s) {
      throw Error("profile: a run took " + seconds(s) + ", over the timeout of " +
                  seconds(timeout_s) + " (timed run " + std::to_string(t + 1) + ")");
    }
    times.push_back(s);
    total += s;
  }
  if (alt && runs % 2 == 0) {  // leave the plan at the dims it was asked for
    plan.execute(parity, dims);
    sync();
  }
  return times;
}

double Backend::time(Plan& plan, int parity, const int64_t* dims, int trials, double timeout_s) {
  std::vector<double> times = timed_runs(plan, parity, dims, trials, trials, 0, timeout_s);
  std::sort(times.begin(), times.end());
  const size_t m = times.size() / 2;
  return times.size() % 2 == 1 ? times[m] : 0.5 * (times[m - 1] + times[m]);
}

}  // namespace luminal

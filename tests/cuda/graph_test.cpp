// GPU suite (skips without a GPU): the graph executor (one CUDA graph per bucket and parity).
// Its results are bitwise those of the stream executor for the same programs; a decode loop over a
// growing context updates no graph node; back-to-back executes with changing dims are each
// correct; buffers moved by hand_off update exactly the nodes that use them, and a refused
// update re-instantiates.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "luminal/cuda/plan.hpp"
#include "luminal/cuda/testing.hpp"
#include "luminal/luminal.hpp"
#include "luminal/models/causal_lm.hpp"
#include "luminal/models/synthetic.hpp"
#include "support/env_scope.hpp"
#include "support/llir_direct.hpp"
#include "support/random_graph.hpp"

namespace luminal {
namespace {

using namespace testing;
using cuda::CudaBackend;
using cuda::CudaOptions;
using cuda::GraphStats;

CompileOptions quick() { return CompileOptions().search_graph_limit(6).verbose(false); }

CudaBackend& stream_backend() {
  static CudaBackend* b = [] {
    CudaOptions o;
    o.executor = CudaOptions::Executor::Stream;
    return new CudaBackend(o);
  }();
  return *b;
}

/// The graph executor with full edges between kernel nodes (no programmatic launch).
CudaBackend& full_edges_backend() {
  static CudaBackend* b = [] {
    CudaOptions o;
    o.programmatic_launch = false;
    return new CudaBackend(o);
  }();
  return *b;
}

/// The graph executor with its kernels in a chain (the default's edges follow the data).
CudaBackend& chain_backend() {
  static CudaBackend* b = [] {
    CudaOptions o;
    o.graph_edges = CudaOptions::GraphEdges::Chain;
    return new CudaBackend(o);
  }();
  return *b;
}

TEST(CudaGraph, DefaultExecutorIsTheGraph) {
  LUMINAL_REQUIRE_GPU();
  if (std::getenv("LUMINAL_CUDA_EXECUTOR")) GTEST_SKIP() << "LUMINAL_CUDA_EXECUTOR is set";
  EXPECT_EQ(gpu().executor(), CudaOptions::Executor::Graph);
  EXPECT_EQ(stream_backend().executor(), CudaOptions::Executor::Stream);
  // Programmatic edges between kernel nodes: on by default from sm_90.
  if (std::getenv("LUMINAL_CUDA_PDL")) return;
  EXPECT_EQ(gpu().programmatic_launch(), gpu().arch() >= "sm_90");
  EXPECT_FALSE(full_edges_backend().programmatic_launch());
  if (std::getenv("LUMINAL_CUDA_GRAPH_EDGES")) return;
  EXPECT_EQ(gpu().graph_edges(), CudaOptions::GraphEdges::Dataflow);
  EXPECT_EQ(chain_backend().graph_edges(), CudaOptions::GraphEdges::Chain);
}

// The programs the search picks for the random graphs of the first CUDA issue, loaded once per
// executor (and on a graph with full edges instead of programmatic ones) and run at every dims
// point of the graph: the outputs are equal byte for byte.
TEST(CudaGraph, MatchesTheStreamExecutorBitwise) {
  LUMINAL_REQUIRE_GPU();
  int checked = 0;
  for (uint64_t seed = 0; seed < 24; ++seed) {
    FuzzGraph fg = random_graph(seed);
    // No load-time folds: run_plan binds the graph's own inputs only.
    Session s(fg.graph, gpu(), quick().folding(false));
    s.compile();
    const LlirGraph llir = s.llir(fg.dyn_points.front());
    LoadedPlan on_graph = load_plan(gpu(), llir, fg.dyn_points);
    LoadedPlan on_stream = load_plan(stream_backend(), llir, fg.dyn_points);
    LoadedPlan on_full = load_plan(full_edges_backend(), llir, fg.dyn_points);
    LoadedPlan on_chain = load_plan(chain_backend(), llir, fg.dyn_points);
    auto* cp = dynamic_cast<cuda::CudaPlan*>(on_graph.plan.get());
    ASSERT_NE(cp, nullptr);
    if (!cp->graph_executor()) continue;
    for (const DynMap& dyn : fg.dyn_points) {
      BufferMap inputs;
      for (const FuzzInput& in : fg.inputs)
        inputs[in.label] = make_input_data(in, dyn, seed * 7 + 1);
      const PlanRun a = run_plan(on_graph, inputs, dyn);
      const PlanRun b = run_plan(on_stream, inputs, dyn);
      const PlanRun c = run_plan(on_full, inputs, dyn);
      const PlanRun f = run_plan(on_chain, inputs, dyn);
      for (const auto& [label, buf] : b.outputs) {
        ASSERT_EQ(a.outputs.at(label).bytes, buf.bytes)
            << "graph " << fg.name << " output " << label << "\n"
            << fg.recipe;
        ASSERT_EQ(c.outputs.at(label).bytes, buf.bytes)
            << "full edges: graph " << fg.name << " output " << label;
        ASSERT_EQ(f.outputs.at(label).bytes, buf.bytes)
            << "chain edges: graph " << fg.name << " output " << label << "\n"
            << fg.recipe;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 40);
}

// A decode loop: 64 steps over a growing context (c changes every step) launch the graph and
// update nothing; the logits match the reference at every step.
TEST(CudaGraph, DecodeLoopUpdatesNoNode) {
  LUMINAL_REQUIRE_GPU();
  const io::ModelConfig cfg = models::llama_config(
      {.layers = 2, .hidden = 64, .ffn = 128, .heads = 4, .kv_heads = 2, .vocab = 97});
  const models::DecoderShape shape{.slots = 96, .max_step = 8};
  models::CausalLM lm = models::CausalLM::random(cfg, gpu(), shape, quick(), 5);
  models::CausalLM ref = models::CausalLM::random_reference(cfg, shape, 5);
  const std::vector<int32_t> prompt = {5, 17, 2, 90, 33};
  auto close = [](const std::vector<float>& a, const std::vector<float>& b, int step) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t k = 0; k < a.size(); ++k)
      ASSERT_NEAR(a[k], b[k], 2e-4) << "step " << step << " logit " << k;
  };
  close(lm.forward(prompt), ref.forward(prompt), -1);
  lm.forward({7});  // the decode bucket's first run (its plans bind here)
  ref.forward({7});
  const GraphStats before = gpu().graph_stats();
  for (int step = 0; step < 64; ++step) {
    const int32_t id = static_cast<int32_t>((step * 31 + 3) % 97);
    close(lm.forward({id}), ref.forward({id}), step);
  }
  const GraphStats after = gpu().graph_stats();
  EXPECT_EQ(after.node_updates, before.node_updates);
  EXPECT_EQ(after.reinstantiations, before.reinstantiations);
  EXPECT_EQ(after.instantiations, before.instantiations);
  EXPECT_EQ(after.launches - before.launches, 64u);
}

// Decoding ahead (LUMINAL_DECODE_AHEAD=1): each step is launched with its token copied on the
// device before the host reads that token (an event after the copy, not a stream sync): the same
// tokens, stops and context as one step at a time, and the step launched past an end-of-sequence
// id is not counted.
TEST(CudaGraph, DecodeAheadGivesTheSameTokens) {
  LUMINAL_REQUIRE_GPU();
  const io::ModelConfig cfg = models::llama_config(
      {.layers = 2, .hidden = 64, .ffn = 128, .heads = 4, .kv_heads = 2, .vocab = 97});
  const models::DecoderShape shape{.slots = 96, .max_step = 8};
  const std::vector<int32_t> prompt = {5, 17, 2, 90, 33};
  struct Run {
    models::Generation gen, later;
    std::vector<int32_t> context;
  };
  auto run = [&](const char* ahead, const models::StopConditions& stop) {
    const testing::EnvScope env("LUMINAL_DECODE_AHEAD", ahead);
    models::CausalLM lm = models::CausalLM::random(cfg, gpu(), shape, quick(), 5);
    Run r;
    r.gen = lm.generate(prompt, 40, {}, {}, stop);
    r.context = lm.context_ids();
    r.later = lm.generate({7, 61}, 8);
    return r;
  };
  const Run off = run("0", {});
  const Run on = run("1", {});
  ASSERT_EQ(off.gen.tokens.size(), 40u);
  EXPECT_EQ(on.gen.tokens, off.gen.tokens);
  EXPECT_EQ(on.context, off.context);
  EXPECT_EQ(on.later.tokens, off.later.tokens);
  models::StopConditions eos;
  eos.eos_ids = {off.gen.tokens[17]};
  const Run eos_off = run("0", eos);
  const Run eos_on = run("1", eos);
  ASSERT_EQ(eos_off.gen.stop, models::Generation::Stop::Eos);
  EXPECT_EQ(eos_on.gen.stop, models::Generation::Stop::Eos);
  EXPECT_EQ(eos_on.gen.tokens, eos_off.gen.tokens);
  EXPECT_EQ(eos_on.context, eos_off.context);
  EXPECT_EQ(eos_on.later.tokens, eos_off.later.tokens);
}

// Independent branches share arena ranges; 1,000 replays (dataflow edges) give the stream
// executor's bytes.
TEST(CudaGraph, ArenaReuseReplayedAThousandTimes) {
  LUMINAL_REQUIRE_GPU();
  Graph g;
  const int64_t n = 4096;
  Tensor a = g.tensor("a", {n}), b = g.tensor("b", {n});
  Tensor x = ((a.exp() + 1.0) * a).sum(0, true);
  Tensor y = ((b.sin() * 2.0) - b).sum(0, true);
  Tensor z = ((a * b).exp2() + b).max(0, true);
  Tensor out = (x + y * z).output("out");
  Tensor diff = ((a + b) * (a - b)).output("diff");
  BufferMap inputs;
  std::vector<float> av(n), bv(n);
  for (int64_t i = 0; i < n; ++i) {
    av[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)));
    bv[i] = static_cast<float>(std::cos(0.11 * static_cast<double>(i)));
  }
  Session s(g, gpu(), quick());
  s.set("a", av);
  s.set("b", bv);
  s.compile();
  inputs["a"] = to_host_buffer(av.data(), av.size(), DType::F32, "a");
  inputs["b"] = to_host_buffer(bv.data(), bv.size(), DType::F32, "b");
  LoadedPlan on_stream = load_plan(stream_backend(), s.llir());
  const PlanRun want = run_plan(on_stream, inputs, {});
  for (int r = 0; r < 1000; ++r) {
    s.execute();
    if (r % 100 != 99) continue;
    ASSERT_EQ(s.get_bytes(out), want.outputs.at("out").bytes) << "replay " << r;
    ASSERT_EQ(s.get_bytes(diff), want.outputs.at("diff").bytes) << "replay " << r;
  }
  // The same program with its kernels in a chain gives the same bytes.
  LoadedPlan on_chain = load_plan(chain_backend(), s.llir());
  EXPECT_EQ(run_plan(on_chain, inputs, {}).outputs.at("out").bytes, want.outputs.at("out").bytes);
  // Dataflow edges on a program of the most e-nodes, none a cuBLASLt call (the search may fuse
  // the branches or take a library call, a barrier every later step waits for): the kernels
  // that read only the graph's inputs wait for nothing, and the graph gives the stream
  // executor's bytes.
  const LlirGraph plain = prefer_ops(g, gpu(), [](std::string_view op) {
                            return !op.starts_with("cuda.Lt") && !op.starts_with("cuda.Row");
                          }).first;
  LoadedPlan on_plain = load_plan(gpu(), plain);
  LoadedPlan plain_stream = load_plan(stream_backend(), plain);
  EXPECT_EQ(run_plan(on_plain, inputs, {}).outputs.at("out").bytes,
            run_plan(plain_stream, inputs, {}).outputs.at("out").bytes);
  auto* cp = dynamic_cast<cuda::CudaPlan*>(on_plain.plan.get());
  ASSERT_NE(cp, nullptr);
  const std::vector<std::vector<size_t>> deps = cp->dataflow(0);
  int roots = 0;
  for (const std::vector<size_t>& d : deps)
    roots += d.empty();
  int independent = 0;
  for (const LlirNode& node : plain.nodes) {
    if (is_input(node) || is_output(node)) continue;
    bool only_inputs = !node.inputs.empty();
    for (int in : node.inputs)
      only_inputs = only_inputs && is_input(plain.nodes[static_cast<size_t>(in)]);
    independent += only_inputs;
  }
  std::printf("[graph] %s: %d kernels read only inputs, %d steps wait for nothing\n",
              plain.op_mix_string().c_str(), independent, roots);
  EXPECT_GE(independent, 2) << plain.to_text();
  EXPECT_GE(roots, 2) << "independent branches start at once";
}

// 100 executes with changing dims, launched back to back without a sync: each reads its own dims
// (the pinned staging ring), as the carried running sum shows.
TEST(CudaGraph, BackToBackDimChanges) {
  LUMINAL_REQUIRE_GPU();
  Graph g;
  g.declare_dim("n", 1, 64);
  Tensor x = g.tensor("x", {64});
  Tensor acc = g.tensor("acc", {1}, DType::F64).persist();
  Tensor next = (acc + x.slice(0, 0, "n").cast(DType::F64).sum(0, true)).output("acc_out");
  g.carry(next, acc);
  Session s(g, gpu(), quick().dim_buckets("n", {DimBucket(1, 64)}));
  std::vector<float> xv(64);
  for (int i = 0; i < 64; ++i)
    xv[i] = static_cast<float>(i + 1);
  s.set("x", xv);
  s.set("acc", std::vector<double>{0.0});
  s.compile();
  double want = 0;
  for (int64_t len : {3, 5}) {  // both parities of the carry bind (and build their graphs)
    want += static_cast<double>(len * (len + 1) / 2);
    s.execute({{"n", len}});
  }
  s.sync();
  const GraphStats before = gpu().graph_stats();
  for (int k = 0; k < 100; ++k) {
    const int64_t len = 1 + (k * 37) % 64;
    want += static_cast<double>(len * (len + 1) / 2);
    s.execute({{"n", len}});
  }
  const GraphStats after = gpu().graph_stats();
  EXPECT_EQ(s.get<double>(next)[0], want);
  EXPECT_EQ(after.node_updates, before.node_updates) << "dims change no node";
  EXPECT_EQ(after.reinstantiations, before.reinstantiations);
  EXPECT_EQ(after.launches - before.launches, 100u);
}

// hand_off moves a buffer: the nodes reading or writing it get new arguments (counted); a
// refused update re-instantiates the graph. Values follow x <- 2x + b each step.
TEST(CudaGraph, HandOffUpdatesNodesAndRefusalReinstantiates) {
  LUMINAL_REQUIRE_GPU();
  Graph g;
  Tensor x = g.tensor("x", {1000}), b = g.tensor("b", {1000});
  Tensor y = (x * 2.0 + b).output("y");
  Session s(g, gpu(), quick());
  std::vector<double> xv(1000), bv(1000);
  for (int i = 0; i < 1000; ++i) {
    xv[i] = i % 7;
    bv[i] = i % 3;
  }
  s.set("x", xv);
  s.set("b", bv);
  s.compile();
  for (int step = 0; step < 4; ++step) {
    const GraphStats before = gpu().graph_stats();
    if (step == 2) cuda::TestHooks::refuse_graph_updates(1);
    s.execute();
    const GraphStats after = gpu().graph_stats();
    if (step > 0) {
      EXPECT_GT(after.node_updates, before.node_updates) << "step " << step;
      EXPECT_EQ(after.reinstantiations - before.reinstantiations, step == 2 ? 1u : 0u);
    }
    for (int i = 0; i < 1000; ++i)
      xv[i] = 2 * xv[i] + bv[i];
    const std::vector<double> got = s.get<double>(y);
    for (int i = 0; i < 1000; i += 97)
      ASSERT_EQ(got[i], xv[i]) << "step " << step << " element " << i;
    s.hand_off(y, x);
  }
  cuda::TestHooks::refuse_graph_updates(0);
}

// A prefill bucket: s changes inside it and no node is updated (every grid over s loops).
TEST(CudaGraph, PrefillDimChangesUpdateNoNode) {
  LUMINAL_REQUIRE_GPU();
  Graph g;
  g.declare_dim("s", 1, 64);
  Tensor x = g.tensor("x", {"s", 32}), w = g.tensor("w", {32, 16});
  Tensor y = (x.matmul(w).softmax(1) + 1.0).output("y");
  Session s(g, gpu(), quick().dim_buckets("s", {DimBucket(1, 1), DimBucket(2, 64)}));
  ReferenceRuntime ref(g);
  std::vector<float> wv(32 * 16);
  for (size_t i = 0; i < wv.size(); ++i)
    wv[i] = static_cast<float>(static_cast<int>(i % 11) - 5) * 0.1f;
  s.set("w", wv);
  ref.set("w", wv);
  s.compile();
  uint64_t updates = 0;
  // The first execute binds the plan to the session's queue (new error word: every node's
  // arguments change once); later changes of s update nothing.
  bool first = true;
  for (int64_t len : {2, 17, 64, 5, 64, 2}) {
    std::vector<float> xv(static_cast<size_t>(len) * 32);
    for (size_t i = 0; i < xv.size(); ++i)
      xv[i] = static_cast<float>(static_cast<int>(i % 13) - 6) * 0.05f;
    s.set("x", xv);
    ref.set("x", xv);
    const GraphStats before = gpu().graph_stats();
    s.execute({{"s", len}});
    ref.execute({{"s", len}});
    if (!first) updates += gpu().graph_stats().node_updates - before.node_updates;
    first = false;
    const auto a = s.get<float>(y), r = ref.get<float>(y);
    ASSERT_EQ(a.size(), r.size());
    for (size_t i = 0; i < a.size(); ++i)
      ASSERT_NEAR(a[i], r[i], 1e-5) << "s " << len << " element " << i;
  }
  EXPECT_EQ(updates, 0u);
}

}  // namespace
}  // namespace luminal

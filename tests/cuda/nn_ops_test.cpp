// GPU suite (skips without a GPU): the nn-level ops LLMs use, compiled for the CUDA backend and
// compared with the ReferenceRuntime (and, where the value is simple to state, with an exact
// computation in double on the host).
//
// The other ops, in f32, f16 and bf16, at several s: silu, gelu (erf and tanh), RoPE
// (nn::apply_rope at the step positions), embedding gather, masked_fill and where, argmax (with
// ties) and nn::greedy_token, matmul (nn::linear with a transposed weight, a plain [m, k] @ [k, n],
// and a GEMV), the SwiGLU MLP (nn::swiglu_mlp); causal attention over a carried KV cache
// (nn::cached_attention: a prefill, two decode steps and a prefill on the filled cache) in f32 and
// bf16; and in-graph sampling (nn::sample, nn::counter_hash / hash_uniform bit-exact against the
// host, seeded draws equal to the reference's, top-k 1 and temperature 0 equal to greedy).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "luminal/compiler/build_space.hpp"
#include "luminal/luminal.hpp"
#include "luminal/nn/attention.hpp"
#include "luminal/nn/linear.hpp"
#include "luminal/nn/mlp.hpp"
#include "luminal/nn/rope.hpp"
#include "luminal/nn/sampling.hpp"
#include "luminal/runtime/host_buffer.hpp"
#include "support/equivalence.hpp"
#include "support/llir_direct.hpp"

#include "cuda/nn_check.hpp"

namespace luminal {
namespace {

using namespace testing::nn_check;

// ------------------------------------------------------------------------------ other LLM ops

/// The elementwise, gather, argmax and matmul ops of an LLM over s tokens, in one graph per dtype.
TEST(CudaLlmOps, ElementwiseGatherArgmaxMatmulMatchTheReference) {
  LUMINAL_REQUIRE_GPU();
  for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
    const std::string dn = dtype_name(dt);
    const int64_t d = 96, heads = 4, hd = 16, vocab = 50, k = 1000, nout = 257;
    Graph g;
    g.declare_dim("s", 1, 64);
    g.declare_dim("c", 1, 512);
    Tensor x = g.tensor("x", {"s", d}, dt);
    x.silu().output("silu");
    x.gelu().output("gelu");
    x.gelu_tanh().output("gelu_tanh");
    Tensor xr = g.tensor("xr", {"s", heads, hd}, dt);
    Tensor inv = g.tensor("inv_freq", {hd / 2}, DType::F32);
    nn::apply_rope(xr, nn::step_positions(g), inv).output("rope");
    Tensor table = g.tensor("table", {vocab, d}, dt);
    Tensor ids = g.tensor("ids", {"s"}, DType::I32);
    nn::embedding(table, ids).output("embedding");
    Tensor mask = g.tensor("mask", {"s", d}, DType::Bool);
    x.masked_fill(mask, -kInf).output("masked_fill");
    Tensor y = g.tensor("y", {"s", d}, dt);
    mask.where(x, y).output("where");
    Tensor ties = g.tensor("ties", {"s", d}, dt);  // small integers: many ties
    ties.argmax(-1).output("argmax");
    nn::greedy_token(ties).output("greedy");
    Tensor a = g.tensor("a", {"s", k}, dt), wl = g.tensor("wl", {nout, k}, dt);
    nn::linear(a, wl).output("linear");
    Tensor m1 = g.tensor("m1", {33, 64}, dt), m2 = g.tensor("m2", {64, 40}, dt);
    m1.matmul(m2).output("matmul");
    Tensor v1 = g.tensor("v1", {k}, dt);
    v1.matmul(wl.transpose(0, 1)).output("gemv");
    const int64_t md = 64, mh = 128;  // SwiGLU MLP: down(silu(gate(x)) * up(x))
    Tensor xm = g.tensor("xm", {"s", md}, dt), wg = g.tensor("wg", {mh, md}, dt),
           wu = g.tensor("wu", {mh, md}, dt), wd = g.tensor("wd", {md, mh}, dt);
    nn::swiglu_mlp(xm, wg, wu, wd).output("mlp");

    Session ses(g, testing::gpu(),
                CompileOptions().search_graph_limit(8).verbose(false).dim_buckets(
                    "s", {DimBucket(1, 1), DimBucket(2, 64).representative(7)}));
    ReferenceRuntime ref(g);
    const std::vector<float> invv = nn::rope_inv_freq(static_cast<int>(hd), 10000.0);
    // Every input of a step of s tokens.
    auto make_inputs = [&](int64_t s) {
      const uint64_t seed = 1000 + static_cast<uint64_t>(s);
      std::map<std::string, HostBuffer> in;
      in["x"] = from_doubles(dt, uniform(dt, s * d, seed, -6, 6));
      in["xr"] = from_doubles(dt, uniform(dt, s * heads * hd, seed + 1, -1, 1));
      in["inv_freq"] = to_host_buffer(invv.data(), invv.size(), DType::F32, "inv_freq");
      in["table"] = from_doubles(dt, uniform(dt, vocab * d, seed + 2, -2, 2));
      std::vector<int32_t> idv(static_cast<size_t>(s));
      for (int64_t i = 0; i < s; ++i)
        idv[static_cast<size_t>(i)] = static_cast<int32_t>((i * 17 + s) % vocab);
      in["ids"] = to_host_buffer(idv.data(), idv.size(), DType::I32, "ids");
      std::vector<double> mv(static_cast<size_t>(s * d)), tv(static_cast<size_t>(s * d));
      std::mt19937_64 rng(seed + 3);
      for (size_t i = 0; i < mv.size(); ++i) {
        mv[i] = static_cast<double>(rng() % 3 == 0);
        tv[i] = static_cast<double>(rng() % 6);
      }
      in["mask"] = from_doubles(DType::Bool, mv);
      in["y"] = from_doubles(dt, uniform(dt, s * d, seed + 4, -6, 6));
      in["ties"] = from_doubles(dt, tv);
      in["a"] = from_doubles(dt, uniform(dt, s * k, seed + 5, -1, 1));
      in["wl"] = from_doubles(dt, uniform(dt, nout * k, seed + 6, -1, 1));
      in["m1"] = from_doubles(dt, uniform(dt, 33 * 64, seed + 7, -1, 1));
      in["m2"] = from_doubles(dt, uniform(dt, 64 * 40, seed + 8, -1, 1));
      in["v1"] = from_doubles(dt, uniform(dt, k, seed + 9, -1, 1));
      in["xm"] = from_doubles(dt, uniform(dt, s * md, seed + 10, -2, 2));
      in["wg"] = from_doubles(dt, uniform(dt, mh * md, seed + 11, -0.25, 0.25));
      in["wu"] = from_doubles(dt, uniform(dt, mh * md, seed + 12, -0.25, 0.25));
      in["wd"] = from_doubles(dt, uniform(dt, md * mh, seed + 13, -0.25, 0.25));
      return in;
    };
    // The search times candidates on full buffers (s = 64: every gather index valid).
    for (auto& [label, b] : make_inputs(64))
      ses.set_bytes(label, b.bytes.data(), b.bytes.size());
    ses.compile();
    for (int64_t s : {1, 7, 33}) {
      const DynMap dyn{{"s", s}, {"c", s + 40}};
      std::map<std::string, HostBuffer> in = make_inputs(s);
      for (auto& [label, b] : in) {
        ses.set_bytes(label, b.bytes.data(), b.bytes.size());
        ref.set_bytes(label, b.bytes.data(), b.bytes.size());
      }
      ses.execute(dyn);
      ref.execute(dyn);
      const std::string at =
          dn + " s=" + std::to_string(s) + " (" + ses.llir(dyn).op_mix_string() + "): ";
      auto values = [&](const Runtime& rt, const char* label) { return rt.get<double>(label); };
      // Exact: gathers, selections, argmax (ties: the lowest index).
      for (const char* label : {"embedding", "masked_fill", "where"})
        EXPECT_EQ(values(ses, label), values(ref, label)) << at << label;
      for (const char* label : {"argmax", "greedy"}) {
        const std::vector<int64_t> got = ses.get<int64_t>(label);
        EXPECT_EQ(got, ref.get<int64_t>(label)) << at << label;
        const std::vector<double> t = to_doubles(dt, in["ties"].bytes);
        for (int64_t i = 0; i < s; ++i) {
          const auto row = t.begin() + i * d;
          EXPECT_EQ(got[static_cast<size_t>(i)], std::max_element(row, row + d) - row)
              << at << label << " row " << i;
        }
      }
      // Activations: f32 chains whose exp2 may differ by 2 ulp, rounded once to the dtype.
      const double D = epsilon(dt), F = floor_abs(dt);
      for (const char* label : {"silu", "gelu", "gelu_tanh"}) {
        const std::vector<double> want = values(ref, label), got = values(ses, label);
        std::vector<double> tol(want.size());
        for (size_t i = 0; i < want.size(); ++i)
          tol[i] = std::fabs(want[i]) * D + 32 * kE * (1 + std::fabs(want[i])) + F;
        const Diff df = compare_values(got, want, tol);
        EXPECT_EQ(df.bad, 0) << at << label << ": " << describe(df, got.size());
      }
      // RoPE: cos/sin in f32 (sin within 2 ulp) rounded to the dtype, then three roundings in it;
      // |x| <= 1. A position off by one moves the first pair by ~|x|.
      {
        const std::vector<double> want = values(ref, "rope"), got = values(ses, "rope");
        const std::vector<double> tol(want.size(), 4 * D + 64 * kE + F);
        const Diff df = compare_values(got, want, tol);
        EXPECT_EQ(df.bad, 0) << at << "rope: " << describe(df, got.size());
      }
      // Matmuls against exact sums: products exact in f32, sums within E (2 + 2 log2 k) of
      // sum |a b|, rounded once to the dtype; against the reference within twice that.
      auto check_matmul = [&](const char* label, const std::vector<double>& A,
                              const std::vector<double>& B, int64_t m, int64_t kk, int64_t nn,
                              bool b_transposed) {
        std::vector<double> want(static_cast<size_t>(m * nn)), tol(want.size());
        const double L = std::log2(static_cast<double>(kk));
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < nn; ++j) {
            double acc = 0, mag = 0;
            for (int64_t q = 0; q < kk; ++q) {
              const double p = A[static_cast<size_t>(i * kk + q)] *
                               B[static_cast<size_t>(b_transposed ? j * kk + q : q * nn + j)];
              acc += p;
              mag += std::fabs(p);
            }
            want[static_cast<size_t>(i * nn + j)] = acc;
            tol[static_cast<size_t>(i * nn + j)] = kE * (2 + 2 * L) * mag + std::fabs(acc) * D;
          }
        const std::vector<double> got = values(ses, label);
        const Diff de = compare_values(got, want, tol);
        EXPECT_EQ(de.bad, 0) << at << label << " vs exact: " << describe(de, got.size());
        const Diff dr = compare_values(got, values(ref, label), tol, 2);
        EXPECT_EQ(dr.bad, 0) << at << label << " vs the reference: " << describe(dr, got.size());
      };
      const std::vector<double> av = to_doubles(dt, in["a"].bytes),
                                wv = to_doubles(dt, in["wl"].bytes);
      check_matmul("linear", av, wv, s, k, nout, true);
      check_matmul("matmul", to_doubles(dt, in["m1"].bytes), to_doubles(dt, in["m2"].bytes), 33, 64,
                   40, false);
      check_matmul("gemv", to_doubles(dt, in["v1"].bytes), wv, 1, k, nout, true);
      // SwiGLU against exact: each hidden activation carries the roundings of gate, up, silu and
      // the product (4 D for 16-bit), then the down projection's sum.
      {
        const std::vector<double> X = to_doubles(dt, in["xm"].bytes),
                                  G = to_doubles(dt, in["wg"].bytes),
                                  U = to_doubles(dt, in["wu"].bytes),
                                  W = to_doubles(dt, in["wd"].bytes);
        const double k_act = 4 * D + kE * (8 + 2 * std::log2(static_cast<double>(md)) +
                                           2 * std::log2(static_cast<double>(mh)));
        std::vector<double> want(static_cast<size_t>(s * md)), tol(want.size());
        for (int64_t i = 0; i < s; ++i) {
          std::vector<double> act(static_cast<size_t>(mh));
          for (int64_t h = 0; h < mh; ++h) {
            double gs = 0, us = 0;
            for (int64_t q = 0; q < md; ++q) {
              gs += X[static_cast<size_t>(i * md + q)] * G[static_cast<size_t>(h * md + q)];
              us += X[static_cast<size_t>(i * md + q)] * U[static_cast<size_t>(h * md + q)];
            }
            act[static_cast<size_t>(h)] = gs / (1 + std::exp(-gs)) * us;
          }
          for (int64_t o = 0; o < md; ++o) {
            double acc = 0, mag = 0;
            for (int64_t h = 0; h < mh; ++h) {
              const double p = act[static_cast<size_t>(h)] * W[static_cast<size_t>(o * mh + h)];
              acc += p;
              mag += std::fabs(p);
            }
            want[static_cast<size_t>(i * md + o)] = acc;
            tol[static_cast<size_t>(i * md + o)] = k_act * mag + std::fabs(acc) * D + F;
          }
        }
        const std::vector<double> got = values(ses, "mlp");
        const Diff de = compare_values(got, want, tol);
        EXPECT_EQ(de.bad, 0) << at << "mlp vs exact: " << describe(de, got.size());
        const Diff dr = compare_values(got, values(ref, "mlp"), tol, 2);
        EXPECT_EQ(dr.bad, 0) << at << "mlp vs the reference: " << describe(dr, got.size());
      }
    }
  }
}

// Causal attention over a carried KV cache: a 5-token prefill, two decode steps and a 3-token
// prefill on top of the filled cache; the output and both caches against the reference each step.
TEST(CudaLlmOps, CachedCausalAttentionMatchesTheReference) {
  LUMINAL_REQUIRE_GPU();
  for (DType dt : {DType::F32, DType::BF16}) {
    const int64_t heads = 8, kv = 2, hd = 32, slots = 64;
    Graph g;
    g.declare_dim("s", 1, 8);
    g.declare_dim("c", 1, slots);
    Tensor q = g.tensor("q", {"s", heads, hd}, dt);
    Tensor k = g.tensor("k", {"s", kv, hd}, dt);
    Tensor v = g.tensor("v", {"s", kv, hd}, dt);
    nn::cached_attention(g, q, k, v, "l0", static_cast<int>(slots)).output("o");
    Session ses(g, testing::gpu(),
                CompileOptions().search_graph_limit(8).verbose(false).dim_buckets(
                    "s", {DimBucket(1, 1), DimBucket(2, 8).representative(5)}));
    ReferenceRuntime ref(g);
    const HostBuffer zeros = from_doubles(dt, std::vector<double>(slots * kv * hd, 0.0));
    for (Runtime* rt : {static_cast<Runtime*>(&ses), static_cast<Runtime*>(&ref)}) {
      rt->set_bytes("l0.k_cache", zeros.bytes.data(), zeros.bytes.size());
      rt->set_bytes("l0.v_cache", zeros.bytes.data(), zeros.bytes.size());
    }
    int64_t c = 0;
    int step = 0;
    for (int64_t s : {5, 1, 1, 3}) {
      c += s;
      const uint64_t seed = 500 + static_cast<uint64_t>(step);
      const HostBuffer qb = from_doubles(dt, uniform(dt, s * heads * hd, seed, -1, 1)),
                       kb = from_doubles(dt, uniform(dt, s * kv * hd, seed + 1, -1, 1)),
                       vb = from_doubles(dt, uniform(dt, s * kv * hd, seed + 2, -1, 1));
      for (Runtime* rt : {static_cast<Runtime*>(&ses), static_cast<Runtime*>(&ref)}) {
        rt->set_bytes("q", qb.bytes.data(), qb.bytes.size());
        rt->set_bytes("k", kb.bytes.data(), kb.bytes.size());
        rt->set_bytes("v", vb.bytes.data(), vb.bytes.size());
      }
      const DynMap dyn{{"s", s}, {"c", c}};
      ses.execute(dyn);
      ref.execute(dyn);
      const std::string at = dtype_name(dt) + " step " + std::to_string(step) +
                             " (s=" + std::to_string(s) + ", c=" + std::to_string(c) + "; " +
                             ses.llir(dyn).op_mix_string() + "): ";
      // f32: a few dozen E; bf16: the softmax weights and the sums round to D (|v| <= 1).
      const double D = epsilon(dt);
      const std::vector<double> want = ref.get<double>("o"), got = ses.get<double>("o");
      std::vector<double> tol(want.size());
      for (size_t i = 0; i < want.size(); ++i)
        tol[i] = dt == DType::F32 ? 64 * kE * (1 + std::fabs(want[i]))
                                  : D * (std::fabs(want[i]) + 2) + 64 * kE;
      const Diff df = compare_values(got, want, tol);
      EXPECT_EQ(df.bad, 0) << at << "o: " << describe(df, got.size());
      // The caches (carried, written in place): exact copies of the new rows.
      for (const char* label : {"l0.k_cache_out", "l0.v_cache_out"})
        EXPECT_EQ(ses.get<double>(label), ref.get<double>(label)) << at << label;
      ++step;
    }
  }
}

// In-graph sampling: the counter hash and its uniforms bit-exact against the host twin; seeded
// draws equal to the reference's (cross-backend: equal where the top-2 perturbed scores differ by
// more than 1e-5 relative, as the LLM issue states; the log may differ by an ulp), repeatable,
// changed by another seed; temperature 0 and top-k 1 are the argmax.
TEST(CudaLlmOps, SamplingInTheGraph) {
  LUMINAL_REQUIRE_GPU();
  const int64_t rows = 8, V = 1000;
  Graph g;
  Tensor logits = g.tensor("logits", {rows, V});
  Tensor seen = g.tensor("seen", {rows, V});
  nn::SamplerInputs in = nn::sampler_inputs(g);
  nn::sample(logits, in, seen).output("token");
  nn::greedy_token(logits).output("greedy");
  Tensor h = nn::counter_hash(in.seed, in.step, rows, V);
  h.output("hash");
  nn::hash_uniform(h).output("uniform");
  Session ses(g, testing::gpu(), CompileOptions().search_graph_limit(4).verbose(false));
  ReferenceRuntime ref(g);
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.f, 2.f);
  std::vector<float> x(static_cast<size_t>(rows * V)), sv(x.size(), 0.f);
  for (float& v : x)
    v = nd(rng);
  for (size_t i = 0; i < sv.size(); i += 13)
    sv[i] = 1.f;
  for (Runtime* rt : {static_cast<Runtime*>(&ses), static_cast<Runtime*>(&ref)}) {
    rt->set("logits", x);
    rt->set("seen", sv);
  }
  auto run = [&](Runtime& rt, const nn::SamplingConfig& cfg, int64_t step) {
    nn::set_sampler_inputs(rt, in, cfg, step);
    rt.execute();
    return rt.get<int32_t>("token");
  };
  // The perturbed score of each token as nn::sample ranks them (z - log E, E = -log u), for the
  // near-tie rule.
  auto near_tie = [&](const nn::SamplingConfig& cfg, int64_t step, int64_t row) {
    std::vector<double> score(static_cast<size_t>(V));
    for (int64_t j = 0; j < V; ++j) {
      const size_t i = static_cast<size_t>(row * V + j);
      double z = x[i];
      if (sv[i] != 0) z = z > 0 ? z / cfg.repetition_penalty : z * cfg.repetition_penalty;
      z /= cfg.temperature;
      const float u = nn::hash_uniform_host(nn::counter_hash_host(cfg.seed, step, row, j));
      score[static_cast<size_t>(j)] = z - std::log(-std::log(static_cast<double>(u)));
    }
    std::partial_sort(score.begin(), score.begin() + 2, score.end(), std::greater<>());
    return score[0] - score[1] <= 1e-5 * std::max(1.0, std::fabs(score[0]));
  };
  const nn::SamplingConfig cfg{.temperature = 0.9,
                               .top_k = 40,
                               .top_p = 0.9,
                               .min_p = 0.02,
                               .repetition_penalty = 1.3,
                               .seed = 42};
  nn::set_sampler_inputs(ses, in, cfg, 3);
  ses.compile();
  for (int64_t step : {0, 3, 11}) {
    const std::vector<int32_t> a = run(ses, cfg, step);
    // The hash and its uniforms, bit-exact.
    const std::vector<int64_t> hv = ses.get<int64_t>("hash");
    const std::vector<float> uv = ses.get<float>("uniform");
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < V; j += 37) {
        const int64_t want = nn::counter_hash_host(cfg.seed, step, r, j);
        ASSERT_EQ(hv[static_cast<size_t>(r * V + j)], want) << "step " << step;
        ASSERT_EQ(uv[static_cast<size_t>(r * V + j)], nn::hash_uniform_host(want));
      }
    const std::vector<int32_t> want = run(ref, cfg, step);
    for (int64_t r = 0; r < rows; ++r) {
      if (a[static_cast<size_t>(r)] == want[static_cast<size_t>(r)]) continue;
      EXPECT_TRUE(near_tie(cfg, step, r))
          << "step " << step << " row " << r << ": token " << a[static_cast<size_t>(r)]
          << ", the reference draws " << want[static_cast<size_t>(r)];
    }
    EXPECT_EQ(run(ses, cfg, step), a) << "the same seed and step draw again";
    nn::SamplingConfig other = cfg;
    other.seed = 43;
    EXPECT_NE(run(ses, other, step), a) << "another seed draws the same 8 tokens";
  }
  // Greedy: the argmax of the logits (ties: the lowest index), also as top-k 1 at temperature 1.
  std::vector<int32_t> argmax(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const auto row = x.begin() + r * V;
    argmax[static_cast<size_t>(r)] = static_cast<int32_t>(std::max_element(row, row + V) - row);
  }
  EXPECT_EQ(run(ses, {}, 5), argmax);
  EXPECT_EQ(ses.get<int32_t>("greedy"), argmax);
  EXPECT_EQ(run(ses, {.temperature = 1.0, .top_k = 1, .seed = 3}, 5), argmax);
  const std::vector<int32_t> hot = run(ses, {.temperature = 1.0, .seed = 3}, 5);
  EXPECT_NE(hot, argmax) << "sampling at temperature 1 drew the argmax in all 8 rows";
}

}  // namespace
}  // namespace luminal

// Model parity with transformers in bf16 and f16, logits only: tiny random-weight checkpoints
// saved in the 16-bit dtype (tests/data/models/{llama3,qwen3}-{bf16,f16}, written by
// scripts/models/make_tiny_models.py from the same weights as llama3/ and qwen3/) run with
// DecoderShape::dtype = BF16 / F16 on the CPU backend and the reference, and their logits at the
// first and last position of each prompt (the last also decoded alone on the KV cache of the
// others) are compared with what transformers computes on the CPU in that dtype.
//
// Tolerance: 16-bit arithmetic is noisy, and two correct implementations may round differently
// (which ops fuse, when a product is rounded, the order of a sum). The script measures that noise
// in transformers itself: d = max |logits(dtype) - logits(f32)| over every position of every
// prompt, the f32 run using the same 16-bit weights upcast exactly (goldens.json
// "max_abs_diff_vs_f32": 0.033 / 0.036 for llama3 / qwen3 in bf16, 0.0036 / 0.0058 in f16, on
// logits up to ~4). Our run and transformers' are each about d from the f32 result, so the bound
// is atol = 2 d ("atol" in goldens.json: 0.066 / 0.073 for bf16, 0.0073 / 0.012 for f16), with no
// relative term. The bf16 bound is 6-9x the f16 one, near the 8x their mantissas (8 vs 11 bits)
// predict. Today we round as transformers does: the logits are bit-equal except two rows of
// llama3-f16 where one rounding flip upstream moves many logits by one f16 step (0.002); the test's
// XML/JSON output records the distance of every row. In transformers, perturbing the bf16 model
// (ignoring a norm's weight, scaling o_proj by 1.05) moves its logits by 0.09-0.18: past the bf16
// bound, and 7x or more past the f16 one.
//
// What else is checked, so that the bound is known to bite and the 16-bit path is really taken:
// - the checkpoint's tensors are in the dtype and the graph's weights and KV cache too (bound as
//   they are, no conversion), and the logits differ from the f32 goldens (16-bit arithmetic);
// - the same checkpoint run with DecoderShape::dtype = F32 (bind converts 16 -> 32 bits exactly)
//   equals transformers' f32 run of it within 1e-5, so the 16-bit bound covers arithmetic only;
// - a golden moved by 2 atol at its top logit fails the comparison, and the f16 checkpoint run
//   in BF16 (wrong dtype: weights rounded to 8 bits, bf16 arithmetic) misses the f16 bound by
//   half again (it is 3-5x past it).
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/io/safetensors.hpp"
#include "luminal/models/causal_lm.hpp"
#include "luminal/runtime/session.hpp"
#include "support/logits_check.hpp"
#include "support/tiny_models.hpp"

namespace luminal {
namespace {

namespace fs = std::filesystem;

fs::path models_dir() { return testing::tiny_models_dir(); }
nlohmann::json goldens(const std::string& name) { return testing::tiny_model_goldens(name); }

using testing::DtypeCase;
using testing::expect_close;
using testing::max_abs_diff;
using testing::row;

models::DecoderShape shape_in(DType dt) {
  models::DecoderShape shape;
  shape.slots = 16;
  shape.max_step = 8;
  shape.dtype = dt;
  return shape;
}

const CompileOptions& options() {
  static const CompileOptions o = CompileOptions().search_graph_limit(4).verbose(false);
  return o;
}

class ParityDtype : public ::testing::TestWithParam<DtypeCase> {};

TEST_P(ParityDtype, LogitsWithinTheDtypesNoise) {
  const DtypeCase c = GetParam();
  const fs::path dir = models_dir() / c.name;
  ASSERT_TRUE(fs::exists(dir / "goldens.json")) << dir;
  const nlohmann::json gold = goldens(c.name);
  const double atol = gold.at("atol").get<double>();
  const double noise = gold.at("max_abs_diff_vs_f32").get<double>();
  // The bound is the measured noise doubled (rounded up to 2 digits), and not loose: under 0.1
  // for bf16 and 0.015 for f16.
  ASSERT_GE(atol, 2 * noise) << c.name;
  ASSERT_LE(atol, 2.2 * noise) << c.name;
  ASSERT_LT(atol, c.dtype == DType::BF16 ? 0.1 : 0.015) << c.name;
  // The checkpoint holds 16-bit tensors of the dtype.
  const io::Weights w = io::Weights::open(dir);
  for (const std::string& n : w.names())
    ASSERT_EQ(w.get(n).dtype, c.dtype) << c.name << " " << n;

  cpu::CpuBackend cpu(2);
  auto lm = models::CausalLM::load(dir, cpu, shape_in(c.dtype), options());
  auto ref = models::CausalLM::load_reference(dir, shape_in(c.dtype));
  const Graph& g = lm.decoder().graph;
  EXPECT_EQ(g.node(g.find("model.embed_tokens.weight")).dtype, c.dtype);
  EXPECT_EQ(g.node(g.find("model.layers.0.self_attn.k_cache")).dtype, c.dtype);
  const int64_t V = lm.vocab_size();
  const nlohmann::json& prompts = gold.at("prompts");
  for (size_t pi = 0; pi < prompts.size(); ++pi) {
    const nlohmann::json& p = prompts[pi];
    const auto ids = p.at("input_ids").get<std::vector<int32_t>>();
    const auto last_row = static_cast<int64_t>(ids.size()) - 1;
    for (models::CausalLM* m : {&lm, &ref}) {
      const std::string who = (m == &lm ? "cpu " : "reference ") + c.name;
      m->reset();
      const std::vector<float> logits = m->forward(ids);
      for (const auto& [key, r] : {std::pair{"first", int64_t{0}}, std::pair{"last", last_row}}) {
        const std::vector<float> got = row(logits, r, V);
        const auto want = p.at(std::string("logits_") + key).get<std::vector<float>>();
        const auto f32 = p.at(std::string("logits_f32_") + key).get<std::vector<float>>();
        expect_close(got, want, atol, 0, who + " " + key + " position");
        // A golden moved by 2 atol at one logit (its top one) fails the same comparison.
        std::vector<float> moved = want;
        const auto top = std::max_element(want.begin(), want.end()) - want.begin();
        moved[static_cast<size_t>(top)] += static_cast<float>(2 * atol);
        EXPECT_NONFATAL_FAILURE(expect_close(got, moved, atol, 0, "moved golden"), "moved golden");
        // 16-bit arithmetic happened: the logits are not the f32 run's.
        EXPECT_GT(max_abs_diff(got, f32), 1e-4) << who << " " << key;
        // How close we are (see the header), in the test's XML/JSON output.
        size_t unequal = 0;
        for (size_t i = 0; i < got.size(); ++i)
          unequal += got[i] != want[i];
        RecordProperty(who + " prompt " + std::to_string(pi) + " " + key,
                       "max_abs_diff " + std::to_string(max_abs_diff(got, want)) + ", " +
                           std::to_string(unequal) + " logits not bit-equal");
      }
      // The last token alone on the cache of the others (the decode plan, s = 1, reading the
      // 16-bit KV cache that the prefill wrote) gives the last position's logits too.
      m->reset();
      m->forward(std::vector<int32_t>(ids.begin(), ids.end() - 1));
      expect_close(m->forward({ids.back()}), p.at("logits_last").get<std::vector<float>>(), atol, 0,
                   who + " last position decoded on the cache");
    }
  }
}

// The same checkpoint computed in f32 equals transformers' f32 run of it: the weights are read
// right, and the 16-bit bounds cover only the arithmetic. The CPU keeps the 16-bit matrices as
// stored (cast in the graph, each value widened exactly) and a decode step reads them with
// cpu.MatmulW16.
TEST_P(ParityDtype, F32RunOfTheSameWeights) {
  const DtypeCase c = GetParam();
  const fs::path dir = models_dir() / c.name;
  const nlohmann::json gold = goldens(c.name);
  cpu::CpuBackend cpu(2);
  auto lm = models::CausalLM::load(dir, cpu, shape_in(DType::F32), options());
  const Graph& g = lm.decoder().graph;
  EXPECT_EQ(g.node(g.find("model.embed_tokens.weight")).dtype, c.dtype);
  EXPECT_EQ(g.node(g.find("model.layers.0.mlp.down_proj.weight")).dtype, c.dtype);
  EXPECT_EQ(g.node(g.find("model.norm.weight")).dtype, DType::F32);  // vectors are widened
  EXPECT_EQ(g.node(g.find("model.layers.0.self_attn.k_cache")).dtype, DType::F32);
  // Every matrix a decode step multiplies by is read as stored: q, k, v, o (reading the merged
  // heads), gate, up and down of every layer, and the head (counted as a set of weights: a
  // program may compute one product twice).
  const LlirGraph& step = lm.session().llir({{"s", 1}, {"c", 1}});
  std::set<std::string> read;
  for (const LlirNode& n : step.nodes) {
    if (n.op->name != std::string_view("cpu.MatmulW16")) continue;
    const LlirNode& w = step.nodes[static_cast<size_t>(n.inputs.at(1))];
    ASSERT_EQ(w.op->name, std::string_view("Input"));
    read.insert(w.attrs.label);
  }
  EXPECT_EQ(read.size(), 7u * static_cast<size_t>(lm.decoder().config.num_hidden_layers) + 1)
      << ::testing::PrintToString(read);
  const int64_t V = lm.vocab_size();
  for (const nlohmann::json& p : gold.at("prompts")) {
    const auto ids = p.at("input_ids").get<std::vector<int32_t>>();
    lm.reset();
    const std::vector<float> logits = lm.forward(ids);
    const std::vector<float> first = row(logits, 0, V);
    const std::vector<float> last = row(logits, static_cast<int64_t>(ids.size()) - 1, V);
    expect_close(first, p.at("logits_f32_first").get<std::vector<float>>(), 1e-5, 1e-5,
                 c.name + " as f32, first position");
    expect_close(last, p.at("logits_f32_last").get<std::vector<float>>(), 1e-5, 1e-5,
                 c.name + " as f32, last position");
    // The last token decoded on the cache of the others (s = 1: cpu.MatmulW16).
    lm.reset();
    lm.forward(std::vector<int32_t>(ids.begin(), ids.end() - 1));
    expect_close(lm.forward({ids.back()}), p.at("logits_f32_last").get<std::vector<float>>(), 1e-5,
                 1e-5, c.name + " as f32, last position decoded on the cache");
  }
}

INSTANTIATE_TEST_SUITE_P(Families, ParityDtype, ::testing::ValuesIn(testing::dtype_cases()),
                         testing::dtype_case_name);

// The f16 bound bites: the f16 checkpoint run in BF16 (its weights rounded to bf16 at bind, bf16
// arithmetic) misses it at the last position of the first prompt.
TEST(ParityDtypeBound, F16CheckpointRunInBf16MissesTheF16Bound) {
  for (const std::string name : {"llama3-f16", "qwen3-f16"}) {
    const nlohmann::json gold = goldens(name);
    const double atol = gold.at("atol").get<double>();
    cpu::CpuBackend cpu(2);
    auto lm = models::CausalLM::load(models_dir() / name, cpu, shape_in(DType::BF16), options());
    const nlohmann::json& p = gold.at("prompts").at(0);
    const auto ids = p.at("input_ids").get<std::vector<int32_t>>();
    const std::vector<float> logits = lm.forward(ids);
    const std::vector<float> got =
        row(logits, static_cast<int64_t>(ids.size()) - 1, lm.vocab_size());
    const double diff = max_abs_diff(got, p.at("logits_last").get<std::vector<float>>());
    EXPECT_GT(diff, 1.5 * atol) << name << " in bf16 is within the f16 bound";
    RecordProperty(name + " in bf16 max_abs_diff", std::to_string(diff));
  }
}

}  // namespace
}  // namespace luminal

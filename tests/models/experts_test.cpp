// models::add_expert_stacks: per-expert tensors (Qwen3-MoE's names, Mixtral's w1/w3/w2) and
// stacked gate/up tensors (GGUF's) become the stacked "experts.gate_up_proj" and
// "experts.down_proj" the decoder reads, byte for byte; a packed checkpoint is left as is; a
// missing layout or a wrong shape is an error naming the tensor.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <numeric>
#include <vector>

#include "luminal/models/experts.hpp"
#include "support/expect_error.hpp"

namespace luminal {
namespace {

constexpr int64_t E = 3, F = 2, D = 4;

// Tensors over one buffer of distinct floats; `add` appends one of `shape`.
struct Builder {
  std::shared_ptr<std::vector<std::vector<float>>> data =
      std::make_shared<std::vector<std::vector<float>>>();
  std::vector<io::TensorView> views;
  float next = 0;
  void add(const std::string& name, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    data->emplace_back(static_cast<size_t>(n));
    std::iota(data->back().begin(), data->back().end(), next);
    next += static_cast<float>(n);
    io::TensorView v;
    v.name = name;
    v.shape = std::move(shape);
    v.bytes = {reinterpret_cast<const uint8_t*>(data->back().data()),
               static_cast<size_t>(n) * sizeof(float)};
    views.push_back(v);
  }
  io::Weights weights() {
    data->reserve(64);
    io::Weights w;
    w.add_views(views, data);
    return w;
  }
};

io::ModelConfig config(io::ModelFamily family) {
  io::ModelConfig c;
  c.family = family;
  c.num_hidden_layers = 1;
  c.num_experts = E;
  c.num_experts_per_tok = 2;
  c.moe_intermediate_size = F;
  c.hidden_size = D;
  return c;
}

std::vector<float> floats(const io::TensorView& t) {
  std::vector<float> v(t.bytes.size() / sizeof(float));
  std::memcpy(v.data(), t.bytes.data(), t.bytes.size());
  return v;
}

std::vector<float> slice_of(const io::TensorView& t, int64_t at, int64_t n) {
  const std::vector<float> v = floats(t);
  return {v.begin() + at, v.begin() + at + n};
}

TEST(ExpertStacks, PerExpertTensorsStackInOrder) {
  for (io::ModelFamily fam : {io::ModelFamily::Qwen3Moe, io::ModelFamily::Mixtral}) {
    const bool mixtral = fam == io::ModelFamily::Mixtral;
    const std::string block =
        mixtral ? "model.layers.0.block_sparse_moe.experts." : "model.layers.0.mlp.experts.";
    Builder b;
    b.data->reserve(64);
    for (int64_t e = 0; e < E; ++e) {
      const std::string x = block + std::to_string(e) + ".";
      b.add(x + (mixtral ? "w1" : "gate_proj") + ".weight", {F, D});
      b.add(x + (mixtral ? "w3" : "up_proj") + ".weight", {F, D});
      b.add(x + (mixtral ? "w2" : "down_proj") + ".weight", {D, F});
    }
    io::Weights w = b.weights();
    models::add_expert_stacks(w, config(fam));
    const io::TensorView& gu = w.get(block + "gate_up_proj");
    const io::TensorView& dn = w.get(block + "down_proj");
    EXPECT_EQ(gu.shape, (std::vector<int64_t>{E, 2 * F, D}));
    EXPECT_EQ(dn.shape, (std::vector<int64_t>{E, D, F}));
    for (int64_t e = 0; e < E; ++e) {
      const std::string x = block + std::to_string(e) + ".";
      EXPECT_EQ(slice_of(gu, e * 2 * F * D, F * D),
                floats(w.get(x + (mixtral ? "w1" : "gate_proj") + ".weight")));
      EXPECT_EQ(slice_of(gu, e * 2 * F * D + F * D, F * D),
                floats(w.get(x + (mixtral ? "w3" : "up_proj") + ".weight")));
      EXPECT_EQ(slice_of(dn, e * D * F, D * F),
                floats(w.get(x + (mixtral ? "w2" : "down_proj") + ".weight")));
    }
  }
}

TEST(ExpertStacks, StackedGateAndUpInterleavePerExpert) {
  const std::string block = "model.layers.0.mlp.experts.";
  Builder b;
  b.data->reserve(64);
  b.add(block + "gate_proj", {E, F, D});
  b.add(block + "up_proj", {E, F, D});
  b.add(block + "down_proj", {E, D, F});
  io::Weights w = b.weights();
  const std::vector<float> down = floats(w.get(block + "down_proj"));
  models::add_expert_stacks(w, config(io::ModelFamily::Qwen3Moe));
  const io::TensorView& gu = w.get(block + "gate_up_proj");
  for (int64_t e = 0; e < E; ++e) {
    EXPECT_EQ(slice_of(gu, e * 2 * F * D, F * D),
              slice_of(w.get(block + "gate_proj"), e * F * D, F * D));
    EXPECT_EQ(slice_of(gu, e * 2 * F * D + F * D, F * D),
              slice_of(w.get(block + "up_proj"), e * F * D, F * D));
  }
  EXPECT_EQ(floats(w.get(block + "down_proj")), down);  // already stacked: left as is
}

// transformers 5's packed Mixtral: router and experts under "mlp.", read under
// "block_sparse_moe." (the same bytes, no copy).
TEST(ExpertStacks, PackedMixtralUnderMlpIsReadUnderBlockSparseMoe) {
  Builder b;
  b.data->reserve(64);
  b.add("model.layers.0.mlp.gate.weight", {E, D});
  b.add("model.layers.0.mlp.experts.gate_up_proj", {E, 2 * F, D});
  b.add("model.layers.0.mlp.experts.down_proj", {E, D, F});
  io::Weights w = b.weights();
  models::add_expert_stacks(w, config(io::ModelFamily::Mixtral));
  for (const char* part : {"gate.weight", "experts.gate_up_proj", "experts.down_proj"}) {
    const io::TensorView& packed = w.get(std::string("model.layers.0.mlp.") + part);
    const io::TensorView& read = w.get(std::string("model.layers.0.block_sparse_moe.") + part);
    EXPECT_EQ(read.shape, packed.shape) << part;
    EXPECT_EQ(read.bytes.data(), packed.bytes.data()) << part;
    EXPECT_EQ(read.bytes.size(), packed.bytes.size()) << part;
  }
  // Qwen3-MoE reads "mlp." itself: nothing is added.
  io::Weights q = b.weights();
  const size_t n = q.names().size();
  models::add_expert_stacks(q, config(io::ModelFamily::Qwen3Moe));
  EXPECT_EQ(q.names().size(), n);
}

TEST(ExpertStacks, MissingOrMisshapedExpertsAreErrors) {
  {
    Builder b;
    b.add("model.layers.0.mlp.gate.weight", {E, D});
    io::Weights w = b.weights();
    testing::expect_error([&] { models::add_expert_stacks(w, config(io::ModelFamily::Qwen3Moe)); },
                          {"layer 0", "model.layers.0.mlp.experts.gate_up_proj",
                           "model.layers.0.mlp.experts.0.gate_proj.weight"});
  }
  Builder b;
  b.data->reserve(64);
  for (int64_t e = 0; e < E; ++e) {
    const std::string x = "model.layers.0.mlp.experts." + std::to_string(e) + ".";
    b.add(x + "gate_proj.weight", {F, e == 1 ? D + 1 : D});
    b.add(x + "up_proj.weight", {F, D});
    b.add(x + "down_proj.weight", {D, F});
  }
  io::Weights w = b.weights();
  testing::expect_error([&] { models::add_expert_stacks(w, config(io::ModelFamily::Qwen3Moe)); },
                        {"model.layers.0.mlp.experts.1.gate_proj.weight", "[2, 5]", "[2, 4]"});
}

}  // namespace
}  // namespace luminal

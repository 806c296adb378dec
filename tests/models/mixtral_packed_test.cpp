// Mixtral in transformers 5's packed layout (router "mlp.gate", experts "mlp.experts.gate_up_proj"
// [E, 2F, hidden] and "mlp.experts.down_proj" [E, hidden, F]), written here from the per-expert
// tests/data/models/mixtral checkpoint: the same logits and greedy tokens as the folder.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/io/safetensors.hpp"
#include "luminal/models/causal_lm.hpp"
#include "luminal/models/experts.hpp"
#include "support/logits_check.hpp"
#include "support/tiny_models.hpp"

namespace luminal {
namespace {

namespace fs = std::filesystem;

// The fixture's weights renamed to the packed layout, in `dir` with its config.json.
void write_packed(const fs::path& from, const fs::path& dir) {
  fs::create_directories(dir);
  fs::copy_file(from / "config.json", dir / "config.json", fs::copy_options::overwrite_existing);
  io::Weights w = io::Weights::open(from);
  const io::ModelConfig cfg = io::parse_config(from / "config.json");
  models::add_expert_stacks(w, cfg);  // block_sparse_moe.experts.{gate_up,down}_proj
  std::vector<io::TensorView> out;
  for (const std::string& name : w.names()) {
    const size_t at = name.find("block_sparse_moe.");
    io::TensorView v = w.get(name);
    if (at != std::string::npos) {
      const std::string rest = name.substr(at + 17);
      if (rest.starts_with("experts.") && rest != "experts.gate_up_proj" &&
          rest != "experts.down_proj")
        continue;  // per-expert w1/w2/w3
      v.name = name.substr(0, at) + "mlp." + rest;
    }
    out.push_back(v);
  }
  io::write_safetensors(dir / "model.safetensors", out);
}

TEST(MixtralPacked, EqualsThePerExpertFolder) {
  const fs::path folder = testing::tiny_models_dir() / "mixtral";
  const fs::path packed =
      fs::temp_directory_path() / ("luminal-mixtral-packed-" + std::to_string(::getpid()));
  write_packed(folder, packed);
  const io::Weights check = io::Weights::open(packed);
  ASSERT_TRUE(check.contains("model.layers.0.mlp.gate.weight"));
  ASSERT_TRUE(check.contains("model.layers.0.mlp.experts.gate_up_proj"));
  ASSERT_FALSE(check.contains("model.layers.0.block_sparse_moe.gate.weight"));
  ASSERT_FALSE(check.contains("model.layers.0.block_sparse_moe.experts.0.w1.weight"));
  models::DecoderShape shape;
  shape.slots = 64;
  shape.max_step = 16;
  cpu::CpuBackend cpu(2);
  const auto opts = CompileOptions().search_graph_limit(4).verbose(false);
  auto a = models::CausalLM::load(folder, cpu, shape, opts);
  auto b = models::CausalLM::load(packed, cpu, shape, opts);
  const std::vector<int32_t> ids = {1, 17, 42, 99, 5, 200, 3, 64};
  testing::expect_close(b.forward(ids), a.forward(ids), 1e-5, 1e-5, "packed vs per-expert logits");
  a.reset();
  b.reset();
  EXPECT_EQ(b.generate_greedy(ids, 16), a.generate_greedy(ids, 16));
  fs::remove_all(packed);
}

}  // namespace
}  // namespace luminal

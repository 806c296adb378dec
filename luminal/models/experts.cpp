#include "luminal/models/experts.hpp"

#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "luminal/core/error.hpp"

namespace luminal::models {

namespace {

std::string shape_text(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// Concatenates `parts` (each `shape`, one dtype) into one buffer of `out_shape`.
io::TensorView stack(const std::string& name, const std::vector<const io::TensorView*>& parts,
                     const std::vector<int64_t>& shape, const std::vector<int64_t>& out_shape,
                     std::deque<std::vector<uint8_t>>& store) {
  const DType t = parts.front()->dtype;
  uint64_t total = 0;
  for (const io::TensorView* p : parts) {
    if (p->dtype != t)
      throw Error("models: expert tensor '" + p->name + "' is " +
                  std::string(luminal::name(p->dtype)) + ", '" + parts.front()->name + "' is " +
                  std::string(luminal::name(t)) + " (the experts of a layer must share one dtype)");
    if (p->shape != shape)
      throw Error("models: expert tensor '" + p->name + "' has shape " + shape_text(p->shape) +
                  ", expected " + shape_text(shape) + " from config.json");
    total += p->bytes.size();
  }
  std::vector<uint8_t>& buf = store.emplace_back(total);
  uint64_t at = 0;
  for (const io::TensorView* p : parts) {
    std::memcpy(buf.data() + at, p->bytes.data(), p->bytes.size());
    at += p->bytes.size();
  }
  io::TensorView v;
  v.name = name;
  v.dtype = t;
  v.shape = out_shape;
  v.bytes = std::span<const uint8_t>(buf.data(), buf.size());
  v.file = parts.front()->file;
  return v;
}

}  // namespace

std::string moe_block_prefix(const io::ModelConfig& cfg) {
  return cfg.family == io::ModelFamily::Mixtral ? "block_sparse_moe." : "mlp.";
}

void add_expert_stacks(io::Weights& w, const io::ModelConfig& cfg) {
  if (cfg.num_experts <= 0) return;
  const bool mixtral = cfg.family == io::ModelFamily::Mixtral;
  const int64_t E = cfg.num_experts, F = cfg.moe_intermediate_size, D = cfg.hidden_size;
  auto store = std::make_shared<std::deque<std::vector<uint8_t>>>();
  std::vector<io::TensorView> views;
  if (mixtral) {
    // transformers 5's packed Mixtral keeps its router and experts under "mlp." (where Qwen3-MoE
    // has them): the same bytes under the "block_sparse_moe." names the decoder reads.
    for (int64_t l = 0; l < cfg.num_hidden_layers; ++l) {
      const std::string layer = "model.layers." + std::to_string(l) + ".";
      for (const char* part : {"gate.weight", "experts.gate_up_proj", "experts.down_proj"})
        if (!w.contains(layer + "block_sparse_moe." + part) && w.contains(layer + "mlp." + part)) {
          io::TensorView alias = w.get(layer + "mlp." + part);
          alias.name = layer + "block_sparse_moe." + part;
          views.push_back(std::move(alias));
        }
    }
    if (!views.empty()) w.add_views(std::exchange(views, {}), store);
  }
  for (int64_t l = 0; l < cfg.num_hidden_layers; ++l) {
    if (!cfg.is_moe_layer(l)) continue;
    const std::string block = "model.layers." + std::to_string(l) + "." + moe_block_prefix(cfg);
    auto expert = [&](int64_t e, const char* hf, const char* mx) {
      return block + "experts." + std::to_string(e) + "." + (mixtral ? mx : hf) + ".weight";
    };
    const std::string gate_up = block + "experts.gate_up_proj";
    const std::string down = block + "experts.down_proj";
    if (!w.contains(gate_up)) {
      std::vector<const io::TensorView*> parts;
      std::vector<int64_t> shape{F, D};
      if (w.contains(block + "experts.gate_proj") && w.contains(block + "experts.up_proj")) {
        // Stacked gate and up [E, F, D]: interleaved per expert.
        const io::TensorView& g = w.get(block + "experts.gate_proj");
        const io::TensorView& u = w.get(block + "experts.up_proj");
        for (const io::TensorView* t : {&g, &u})
          if (t->shape != std::vector<int64_t>{E, F, D})
            throw Error("models: expert tensor '" + t->name + "' has shape " +
                        shape_text(t->shape) + ", expected " + shape_text({E, F, D}) +
                        " from config.json");
        const uint64_t per = g.bytes.size() / static_cast<uint64_t>(E);
        std::deque<io::TensorView> rows;  // one [F, D] slice per expert and kind
        for (int64_t e = 0; e < E; ++e)
          for (const io::TensorView* t : {&g, &u}) {
            io::TensorView r = *t;
            r.shape = shape;
            r.bytes = t->bytes.subspan(static_cast<uint64_t>(e) * per, per);
            parts.push_back(&rows.emplace_back(std::move(r)));
          }
        views.push_back(stack(gate_up, parts, shape, {E, 2 * F, D}, *store));
      } else {
        if (!w.contains(expert(0, "gate_proj", "w1")))
          throw Error("models: the checkpoint has no experts for layer " + std::to_string(l) +
                      ": neither '" + gate_up + "' (packed) nor '" + expert(0, "gate_proj", "w1") +
                      "' (per expert)");
        for (int64_t e = 0; e < E; ++e) {
          parts.push_back(&w.get(expert(e, "gate_proj", "w1")));
          parts.push_back(&w.get(expert(e, "up_proj", "w3")));
        }
        views.push_back(stack(gate_up, parts, shape, {E, 2 * F, D}, *store));
      }
    }
    if (!w.contains(down)) {
      if (!w.contains(expert(0, "down_proj", "w2")))
        throw Error("models: the checkpoint has no experts for layer " + std::to_string(l) +
                    ": neither '" + down + "' (packed) nor '" + expert(0, "down_proj", "w2") +
                    "' (per expert)");
      std::vector<const io::TensorView*> parts;
      for (int64_t e = 0; e < E; ++e)
        parts.push_back(&w.get(expert(e, "down_proj", "w2")));
      views.push_back(stack(down, parts, {D, F}, {E, D, F}, *store));
    }
  }
  if (!views.empty()) w.add_views(std::move(views), std::move(store));
}

}  // namespace luminal::models

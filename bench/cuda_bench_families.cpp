// bench_cuda's newer model families (see cuda_bench.hpp): the decode step of a Qwen3-30B-A3B-shaped
// mixture of experts cut to 12 layers and of a Gemma-3-1B shape, in bf16 with seeded random
// weights generated on the GPU and greedy argmax in the graph.
//
// For the MoE the line also gives the bytes a decode step reads, against the active-parameter
// floor: weights read = every weight input read in full, except one that only expert matmuls
// read by id (cuda.ExpertGemv: k of its E experts) and a table only gathered from (the rows
// gathered); the floor = every weight of the graph with the stacked experts at k of E and the
// embedding one row. Both are also given in ms at the copy bandwidth, and the kernels' own bytes
// (their cost hints: read + written, activations and KV cache included) beside them.
//
// `bench_cuda N expert` times the expert matmuls of that MoE alone (expert_shapes).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/cuda_bench.hpp"
#include "bench/moe_bytes.hpp"
#include "luminal/compiler/build_space.hpp"
#include "luminal/cuda/device.hpp"
#include "luminal/cuda/driver.hpp"
#include "luminal/io/hf_config.hpp"
#include "luminal/luminal.hpp"
#include "luminal/models/decoder.hpp"
#include "luminal/models/synthetic.hpp"
#include "luminal/nn/moe.hpp"
#include "luminal/nn/sampling.hpp"
#include "tests/support/llir_direct.hpp"

namespace luminal::bench_cuda {

namespace {

namespace fs = std::filesystem;
using cuda::CudaBackend;

/// Qwen3-30B-A3B (Qwen/Qwen3-30B-A3B's config.json) with 12 of its 48 layers.
const char* kQwen3Moe12 = R"({"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
  "hidden_size": 2048, "intermediate_size": 6144, "moe_intermediate_size": 768,
  "num_hidden_layers": 12, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
  "num_experts": 128, "num_experts_per_tok": 8, "norm_topk_prob": true, "vocab_size": 151936,
  "decoder_sparse_step": 1, "mlp_only_layers": [], "max_position_embeddings": 40960,
  "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "hidden_act": "silu",
  "tie_word_embeddings": false, "torch_dtype": "bfloat16"})";

/// Gemma-3-1B (google/gemma-3-1b-it's text config): every 6th layer global, the others a
/// 512-token window; no soft-capping.
const char* kGemma3_1b = R"({"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text",
  "hidden_size": 1152, "intermediate_size": 6912, "num_hidden_layers": 26,
  "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256, "vocab_size": 262144,
  "sliding_window": 512, "sliding_window_pattern": 6, "query_pre_attn_scalar": 256,
  "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
  "hidden_activation": "gelu_pytorch_tanh", "max_position_embeddings": 32768,
  "tie_word_embeddings": true, "torch_dtype": "bfloat16"})";

double storage(const LlirNode& n) { return bench::storage_of(n.attrs.dtype, n.attrs.shape); }

int count_ops(const LlirGraph& g, std::string_view a, std::string_view b = {}) {
  int n = 0;
  for (const LlirNode& node : g.nodes)
    n += node.op->name == a || (!b.empty() && node.op->name == b);
  return n;
}

}  // namespace

void family_decode(double copy_gbs, int limit, const std::string& which) {
  const bool moe = which == "qwen3moe";
  const std::string what = moe ? "Qwen3-30B-A3B shape cut to 12 layers (hidden 2048, 128 experts, "
                                 "8 active, expert FFN 768, 32/4 heads)"
                               : "Gemma-3-1B shape (26 layers, hidden 1152, 4/1 heads, head_dim "
                                 "256, FFN 6912, vocab 262144, window 512)";
  const fs::path cache = temp_folder(which);
  try {
    const io::ModelConfig cfg = io::parse_config_json(moe ? kQwen3Moe12 : kGemma3_1b, which);
    const std::initializer_list<int> contexts = {128, 2048};
    const int steps = 30;
    const int slots = slots_covering(contexts, steps);
    models::DecoderShape shape;
    shape.slots = slots;
    shape.max_step = 1;
    shape.dtype = DType::BF16;
    // BENCH_ROUTER=argmax or ranks forces the router's top-k form (nn::TopKForm; default: both,
    // the search picks).
    const char* router = std::getenv("BENCH_ROUTER");
    const std::string router_form = router ? router : "searched";
    if (router_form == "argmax") shape.router = nn::TopKForm::Argmax;
    if (router_form == "ranks") shape.router = nn::TopKForm::Ranks;
    models::Decoder d = models::build_decoder(cfg, shape);
    nn::greedy_token(d.last_logits).output("token");
    CudaBackend be(cuda::CudaOptions{0, cache / "kernels", 16});
    Session s(d.graph, be, decode_opts(limit, cache, slots, 1, 128).time_budget(150));
    const auto t0 = Clock::now();
    fill(s, d);
    be.sync();
    const double weights_s = seconds_since(t0);
    const auto t1 = Clock::now();
    s.compile();
    const double compile_s = seconds_since(t1);
    const LlirGraph& prog = s.llir({{"s", 1}, {"c", 128}});
    double all_bytes = 0;
    for (NodeId id : d.graph.inputs())
      if (models::is_weight(d.graph.node(id).label))
        all_bytes += static_cast<double>(
            storage_bytes(d.graph.node(id).dtype, d.graph.node(id).shape).eval({}));
    const bench::MoeOps ops{.experts = {"cuda.ExpertGemv", "cuda.ExpertGemvCast", "cuda.ExpertRows",
                                        "cuda.ExpertRowsCast", "cuda.ExpertGemvGlu",
                                        "cuda.ExpertRowsGlu", "cuda.ExpertGemvSum"},
                            .qgather = "cuda.QGather"};
    const double read = bench::program_weight_bytes(prog, cfg, ops);
    int expert_nodes = 0;
    for (const LlirNode& n : prog.nodes)
      expert_nodes += ops.reads_by_expert(n.op->name);
    const double floor = bench::floor_weight_bytes(d.graph, cfg);
    const char* env = std::getenv("LUMINAL_CUDA_EXPERT");
    std::printf(
        "%s, bf16: %.2f GB of weights, random on the GPU in %.1f s; compile %.1f s; "
        "LUMINAL_CUDA_EXPERT=%s; router %s; %d expert matmuls (cuda.Expert*)\n  program: %s\n",
        what.c_str(), all_bytes / 1e9, weights_s, compile_s, env ? env : "(unset)",
        router_form.c_str(), expert_nodes, prog.op_mix_string().c_str());
    std::printf("%s", search_lines(s).c_str());
    for (int ctx : contexts) {
      const DecodeTiming t = time_decode(be, s, ctx, steps);
      std::printf(
          "%s decode at context %d: %.3f ms/token (argmax in the graph, token fed back), %zu "
          "kernels/token, GPU busy %.3f ms of a %.3f ms replay",
          moe ? "Qwen3-MoE 12-layer bf16" : "Gemma-3-1B bf16", ctx, t.ms_per_token, t.kernels,
          t.busy_ms, t.replay_ms);
      if (moe) {
        std::printf(
            "; weights read per token %.3f GB against the active-parameter floor %.3f GB "
            "(%.2fx; %.3f ms and %.3f ms at the copy bandwidth), kernels' bytes %.3f GB",
            read / 1e9, floor / 1e9, read / floor, read / (copy_gbs * 1e9) * 1e3,
            floor / (copy_gbs * 1e9) * 1e3, t.bytes / 1e9);
      } else {
        std::printf("; floor %.3f ms (%.2f GB of weights at the copy bandwidth)",
                    all_bytes / (copy_gbs * 1e9) * 1e3, all_bytes / 1e9);
      }
      std::printf("\n  by op: %s\n", t.by_op.c_str());
    }
  } catch (const std::exception& e) {
    std::printf("%s decode: FAILED: %s\n", what.c_str(), e.what());
  }
  clear_cache(cache);
}

namespace {

struct ExpertShape {
  const char* what;
  int64_t n, d;  // each expert's W is [n, d]
  bool shared;   // one activation row for the k choices (gate_up), else one a choice (down)
};

// Qwen3-30B-A3B's expert matmuls: gate and up packed (2 x 768 rows), down.
const ExpertShape kExpertShapes[] = {{"gate_up", 1536, 2048, true}, {"down", 2048, 768, false}};
constexpr int64_t kStack = 128, kActive = 8;

/// `copies` expert_linear over one stacked weight, copy i choosing experts 8i .. 8i + 7.
Graph experts_graph(const ExpertShape& sh, DType wt, int copies) {
  Graph g;
  const DType xt = wt == DType::BF16 ? DType::BF16 : DType::F32;
  Tensor w = g.tensor("w", {kStack, sh.n, sh.d}, wt);
  for (int i = 0; i < copies; ++i) {
    const std::string c = std::to_string(i);
    Tensor x =
        sh.shared ? g.tensor("x" + c, {1, sh.d}, xt) : g.tensor("x" + c, {1, kActive, sh.d}, xt);
    Tensor ids = g.tensor("ids" + c, {1, kActive}, DType::I32);
    nn::expert_linear(x, is_block(wt) ? w.dequantize() : w, ids).output("y" + c);
  }
  return g;
}

/// Milliseconds of one replay of `g`'s program with every expert matmul as an expert op (the
/// activation read in 16 bits where it can) or, with `unfused`, as none; -1 when no such program
/// exists.
double experts_ms(CudaBackend& be, const Graph& g, bool unfused, int copies) {
  BuiltSpace b = build_search_space(g, be, g.dim_facts());
  const EGraph& eg = b.space->egraph();
  const LlirGraph llir = to_llir(*b.space, b.space->best_scoring_genome([&](ENodeId id) {
    const ENode& node = eg.node(id);
    if (node.op->name != "cuda.ExpertGemv") return 0.0;
    if (unfused) return -1.0;
    return eg.dtype(node.children[0]) != DType::F32 ? 2.0 : 1.0;
  }));
  if (count_ops(llir, "cuda.ExpertGemv") != (unfused ? 0 : copies)) return -1;
  std::vector<uint64_t> out_bytes;
  for (const LlirNode& n : llir.nodes)
    if (n.op->name == "Output") out_bytes.push_back(static_cast<uint64_t>(storage(n)));
  return forced_plan_ms(
      be, llir,
      [&](const std::string& label) {
        const Node& n = g.node(g.find(label));
        return static_cast<uint64_t>(storage_bytes(n.dtype, n.shape).eval({}));
      },
      [&](size_t i) { return out_bytes[i]; }, 30,
      [&](const std::string& label, Buffer b) {
        if (!label.starts_with("ids")) return fill_pattern(be, b);
        std::vector<int32_t> ids(kActive);
        for (int64_t j = 0; j < kActive; ++j)
          ids[static_cast<size_t>(j)] =
              static_cast<int32_t>((std::stoi(label.substr(3)) * kActive + j) % kStack);
        be.upload(b, 0, ids.data(), ids.size() * 4);
      });
}

}  // namespace

void expert_shapes(double copy_gbs) {
  const fs::path cache =
      fs::temp_directory_path() / ("luminal_bench_expert_" + std::to_string(getpid()));
  try {
    cuda::CudaOptions opts{0, cache / "kernels", 16};
    opts.cublaslt = false;
    CudaBackend be(opts);
    for (DType t : {DType::BF16, DType::Q8_0, DType::Q4_K})
      for (const ExpertShape& sh : kExpertShapes) {
        // Copies reading distinct experts, 200 MB or more in all (over twice the L2).
        const double wbytes =
            static_cast<double>(kActive) * static_cast<double>(storage_bytes(t, sh.n * sh.d));
        const int copies = std::min<int>(static_cast<int>(kStack / kActive),
                                         std::max(1, static_cast<int>(2e8 / wbytes) + 1));
        const Graph g = experts_graph(sh, t, copies);
        auto gbs = [&](double ms) { return ms > 0 ? wbytes / (ms * 1e-3) / 1e9 : 0.0; };
        std::string line;
        for (const char* warps : {"", "1", "2", "4", "8"}) {
          if (*warps)
            ::setenv("LUMINAL_CUDA_EXPERT_WARPS", warps, 1);
          else
            ::unsetenv("LUMINAL_CUDA_EXPERT_WARPS");
          const double ms = experts_ms(be, g, false, copies) / copies;
          char buf[160];
          std::snprintf(buf, sizeof buf, "%sW %s %.4f ms %.0f GB/s (%.0f%%)",
                        line.empty() ? "" : ", ", *warps ? warps : "default", ms, gbs(ms),
                        100 * gbs(ms) / copy_gbs);
          line += buf;
        }
        ::unsetenv("LUMINAL_CUDA_EXPERT_WARPS");
        const double un = experts_ms(be, g, true, copies) / copies;
        std::printf(
            "expert %s %s: %lld of %lld experts of [%lld, %lld], %d copies: cuda.ExpertGemv %s; "
            "unfused (gather + matmul) %.4f ms %.0f GB/s (%.0f%%), of the weights' bytes\n",
            sh.what, std::string(name(t)).c_str(), static_cast<long long>(kActive),
            static_cast<long long>(kStack), static_cast<long long>(sh.n),
            static_cast<long long>(sh.d), copies, line.c_str(), un, gbs(un),
            100 * gbs(un) / copy_gbs);
      }
  } catch (const std::exception& e) {
    std::printf("expert shapes: FAILED: %s\n", e.what());
  }
  std::error_code ec;
  fs::remove_all(cache, ec);
}

}  // namespace luminal::bench_cuda

// Mixture-of-experts decode on the CPU: each model in the gathered form (the chosen experts'
// rows read by id: cpu.ExpertMatmul) and the dense masked form (every expert on every token),
// decode TPOT and the weight bytes a decode step reads, against the active-parameter floor.
//
//   bench_moe_cpu [threads = 2] [steps = 64] [source dir = .] [form: gathered | dense | both]
//                 [router: searched | argmax | ranks | all (default searched)]
//
// The router's top-k (nn::TopKForm): searched offers both forms to the search, argmax and ranks
// one each; "kernels" counts the decode program's nodes.
// Models: the tiny Qwen3-MoE and Mixtral fixtures (tests/data/models; 4 experts, 2 per token) and
// a wider synthetic Qwen3-MoE with seeded random weights (hidden 512, 4 layers, 32 experts, 4
// per token, expert FFN 256, vocabulary 4096). TPOT: the median of `steps` one-token forward()
// calls after a 16-token prompt (context 17 to 16 + steps); prefill: the median of 5 forward()s
// of that prompt from an empty context.
//
// Bytes per token are counted on the decode program (weights are f32): every weight input read
// in full, except an input only cpu.ExpertMatmul reads (k of its E experts: one token's choice)
// and a table only gathered from (the rows gathered). The floor is the same count over the
// graph's weights with only the k chosen experts and one embedding row: what a decode step must
// read.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/moe_bytes.hpp"
#include "bench/timing.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/io/hf_config.hpp"
#include "luminal/models/causal_lm.hpp"
#include "luminal/models/synthetic.hpp"
#include "luminal/nn/moe.hpp"
#include "luminal/runtime/session.hpp"

using namespace luminal;

namespace {

const char* kWide = R"({"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
  "hidden_size": 512, "intermediate_size": 1024, "moe_intermediate_size": 256,
  "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 64,
  "num_experts": 32, "num_experts_per_tok": 4, "norm_topk_prob": true, "vocab_size": 4096,
  "max_position_embeddings": 1024, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
  "hidden_act": "silu", "tie_word_embeddings": false, "torch_dtype": "float32"})";

const char* kRouter128 = R"({"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
  "hidden_size": 256, "intermediate_size": 768, "moe_intermediate_size": 64,
  "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64,
  "num_experts": 128, "num_experts_per_tok": 8, "norm_topk_prob": true, "vocab_size": 4096,
  "max_position_embeddings": 1024, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
  "hidden_act": "silu", "tie_word_embeddings": false, "torch_dtype": "float32"})";

const char* router_name(nn::TopKForm f) {
  return f == nn::TopKForm::Argmax ? "argmax" : f == nn::TopKForm::Ranks ? "ranks" : "searched";
}

void run(const std::string& name, const io::ModelConfig& cfg, const std::filesystem::path& dir,
         int threads, int steps, const std::string& forms, const std::string& routers) {
  for (models::MoeForm form : {models::MoeForm::Gathered, models::MoeForm::Dense})
    for (nn::TopKForm router :
         {nn::TopKForm::Searched, nn::TopKForm::Argmax, nn::TopKForm::Ranks}) {
      if (forms != "both" && forms != (form == models::MoeForm::Gathered ? "gathered" : "dense"))
        continue;
      if (routers != "all" && routers != router_name(router)) continue;
      models::DecoderShape shape;
      shape.slots = 16 + steps + 1;
      shape.max_step = 16;
      shape.logits = models::Logits::Last;
      shape.moe = form;
      shape.router = router;
      cpu::CpuBackend cpu(threads);
      const auto opts = CompileOptions().search_graph_limit(16).profile_timeout(10).verbose(false);
      const auto t0 = bench::Clock::now();
      models::CausalLM lm = dir.empty() ? models::CausalLM::random(cfg, cpu, shape, opts, 1)
                                        : models::CausalLM::load(dir, cpu, shape, opts);
      const double load_s = bench::seconds_since(t0);
      std::vector<int32_t> prompt;
      for (int i = 0; i < 16; ++i)
        prompt.push_back((i * 37 + 11) % static_cast<int32_t>(cfg.vocab_size));
      // Prefill: the prompt from an empty context (the prefill bucket; rows grouped by expert).
      std::vector<double> prefill;
      for (int i = 0; i < 5; ++i) {
        lm.reset();
        const auto p0 = bench::Clock::now();
        lm.forward(prompt);
        prefill.push_back(bench::seconds_since(p0));
      }
      std::vector<double> times;
      int32_t tok = 1;
      for (int i = 0; i < steps; ++i) {
        const auto s0 = bench::Clock::now();
        lm.forward({tok});
        times.push_back(bench::seconds_since(s0));
        tok = (tok * 31 + 7) % static_cast<int32_t>(cfg.vocab_size);
      }
      const double tpot = bench::median(times);
      const LlirGraph& decode = lm.session().llir({{"s", 1}, {"c", 17}});
      const auto mix = decode.op_mix();
      const int experts = mix.count("cpu.ExpertMatmul") ? mix.at("cpu.ExpertMatmul") : 0;
      int kernels = 0;
      for (const auto& [op, count] : mix)
        kernels += count;
      const double bytes = bench::program_weight_bytes(
          decode, cfg, {.experts = {"cpu.ExpertMatmul"}, .qgather = "cpu.QGather"});
      const double floor = bench::floor_weight_bytes(lm.decoder().graph, cfg);
      std::printf(
          "| %s | %s | %s | %.3f ms (%.0f tok/s) | %.2f MB | %.2f MB | %.2fx | %.3f ms | %d | %d | "
          "%.1f s |\n",
          name.c_str(), form == models::MoeForm::Gathered ? "gathered" : "dense",
          router_name(router), tpot * 1e3, 1.0 / tpot, bytes / 1e6, floor / 1e6, bytes / floor,
          bench::median(prefill) * 1e3, experts, kernels, load_s);
      // A candidate the search rejected (a seed among them would leave a slower program).
      for (const SearchReport& r : lm.session().reports())
        if (r.rejected > 0)
          std::printf("|  | search %s: %d of %d candidates rejected, the first: %s |\n",
                      r.bucket.c_str(), r.rejected, r.candidates,
                      r.first_rejection.substr(0, 200).c_str());
      std::fflush(stdout);
    }
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 64;
  const std::filesystem::path root = argc > 3 ? argv[3] : ".";
  const std::string forms = argc > 4 ? argv[4] : "both";
  const std::string routers = argc > 5 ? argv[5] : "searched";
  std::printf("MoE decode on the CPU, %d threads, median of %d steps\n\n", threads, steps);
  std::printf(
      "| model | experts | router | TPOT | weights read per token | active floor | read / floor | "
      "prefill 16 tokens | cpu.ExpertMatmul nodes (decode) | kernels (decode) | load + compile "
      "|\n"
      "|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const char* m : {"qwen3-moe", "mixtral"}) {
    const std::filesystem::path dir = root / "tests" / "data" / "models" / m;
    run(m, io::parse_config(dir / "config.json"), dir, threads, steps, forms, routers);
  }
  run("qwen3-moe wide (synthetic)", io::parse_config_json(kWide, "wide"), {}, threads, steps, forms,
      routers);
  run("qwen3-moe 128x8 router (synthetic)", io::parse_config_json(kRouter128, "router128"), {},
      threads, steps, forms, routers);
  return 0;
}

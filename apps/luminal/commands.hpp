#pragma once
// The `luminal` command-line tool: one binary, one file per subcommand.
//
//   luminal inspect DIR               what a Hugging Face model folder or a .gguf file holds
//   luminal tokenize DIR "text"       token ids and pieces (DIR: a folder or a .gguf file)
//   luminal run DIR --prompt TEXT     generation (Llama-family models; --chat, sampling flags)
//   luminal bench DIR -p 128 -n 128   prefill and decode speed, TTFT, TPOT, peak memory
//
// A subcommand is a function that adds itself to the root app (CLI11) and sets its callback;
// main.cpp calls each one. Callbacks report problems by throwing luminal::Error, which main
// prints as "luminal: error: ..." with exit code 1. Later subcommands (run, bench, serve) add a
// file and a line to main.cpp.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <memory>
#include <string>

#include "luminal/compiler/options.hpp"
#include "luminal/io/hf_config.hpp"
#include "luminal/nn/moe.hpp"
#include "luminal/program/backend.hpp"

namespace luminal::models {
class CausalLM;
}

namespace luminal::cli {

void add_inspect(CLI::App& app);
void add_tokenize(CLI::App& app);
void add_run(CLI::App& app);
void add_bench(CLI::App& app);

/// --backend and --threads (backend.cpp).
struct BackendChoice {
  std::string name;  // "cpu", "cuda" or empty: cuda when cuda_available(), else cpu
  int threads = 0;   // CPU threads (0: all)
};
void add_backend_options(CLI::App* cmd, BackendChoice& choice);
/// The chosen backend; says which in one line on stderr ("luminal: backend cpu (no GPU: ...)").
/// Throws luminal::Error for an unknown name or --backend cuda without a usable GPU (the reason).
std::unique_ptr<Backend> make_backend(const BackendChoice& choice);

/// --dtype auto|f32|bf16|f16 for run and bench: the dtype the model computes in.
void add_dtype_option(CLI::App* cmd, std::string& choice);
/// The dtype for `choice`. auto: a 16-bit checkpoint (config dtype bf16/f16, or a GGUF whose
/// matrices are all BF16 or F16) runs in that dtype on the GPU, where its weights stay 16-bit and
/// half the bytes are read; everything else, and every model on the CPU, runs in f32. Throws
/// luminal::Error naming the flag for anything else.
DType model_dtype(const std::string& choice, const io::ModelConfig& config, const Backend& backend);
/// The router's top-k form for a MoE model on this backend (models::DecoderShape::router).
nn::TopKForm router_form(const Backend& backend);
/// Checks that `dir` is an existing folder (errors name it and say what is expected there).
void require_model_folder(const std::filesystem::path& dir);
/// The model a command runs: `given`, or the default model (models::default_model_path()) when
/// empty; errors say how to fetch the default or what to give.
std::filesystem::path model_path(const std::string& given);
/// The compile options of `run` and `bench`: a bounded search (20 candidates, `budget_s` seconds
/// per bucket), quiet unless stderr is a terminal (then progress bars).
CompileOptions compile_options(double budget_s);
/// `text` with control characters, backslashes and DEL escaped (\n, \t, \r, \\, \xNN).
std::string escape(std::string_view text);

/// "92.1 MiB resident: q4_1 63.3 MiB (210), ..." for a loaded model's weights (summary.cpp).
std::string weights_line(const models::CausalLM& lm);
/// The ops reading the weights in the decode program, with the CPU's kernel ISA.
std::string kernels_line(models::CausalLM& lm, const Backend& backend);
/// What a loaded model's session allocated (Session::memory_bytes) and its main parts, in bytes:
/// the weights (GGUF or safetensors tensors used in place: the mapped file), the KV caches, the
/// arena the buckets share and the plans' workspaces. The rest of `total` is the other input and
/// output buffers: the logits, and the caches' carried outputs, which stay untouched (not
/// resident) while the caches are updated in place.
struct SessionMemory {
  uint64_t total = 0, weights = 0, kv_cache = 0, arena = 0, workspaces = 0;
};
SessionMemory session_memory(models::CausalLM& lm);
/// "122.1 MiB: weights 92.1 MiB, KV cache 11.2 MiB, arena 7.3 MiB, other buffers 11.5 MiB".
std::string memory_line(const SessionMemory& m);
/// The process's peak resident memory (VmHWM) in bytes, 0 when /proc is not readable.
uint64_t peak_rss_bytes();

}  // namespace luminal::cli

// llama.cpp reference for SmolLM2-135M-Instruct: teacher-forced top-1 at every position and a
// 32-token greedy continuation for the prompts of tests/data/gguf/smollm2_reference.json, each
// with its top-2 margin (logit of the top-1 minus the runner-up's; "margin" per position,
// "greedy_margin" per greedy step).
//
//   L=$(scripts/gguf/build_llamacpp.sh --avx2)   # libllama, AVX2 only (see below)
//   M=$(dirname "$(scripts/fetch_smollm2.sh)")   # the model cache
//   g++ -O2 -std=c++17 -I$L/llama.cpp/include -I$L/llama.cpp/ggml/include \
//       scripts/models/llamacpp_reference.cpp -L$L/build-avx2/bin -lllama -lggml -lggml-base \
//       -Wl,-rpath,$L/build-avx2/bin -o /tmp/llamacpp_reference
//   python3 -c "import json; [print(p[\"name\"], *p[\"input_ids\"]) for p in
//   json.load(open(\"tests/data/gguf/smollm2_reference.json\"))[\"prompts\"]]" >/tmp/prompts.txt
//   /tmp/llamacpp_reference $M/SmolLM2-135M-Instruct.Q4_1.gguf </tmp/prompts.txt \
//       >tests/data/gguf/smollm2_llamacpp.jsonl
//
// The other quantizations: scripts/gguf/make_quant_models.sh, then for each T of Q4_0 Q5_0 Q5_1
// Q8_0 Q4_K_M Q5_K_M Q6_K
//   /tmp/llamacpp_reference $M/SmolLM2-135M-Instruct.$T.gguf </tmp/prompts.txt \
//       >tests/data/gguf/smollm2_llamacpp_${T,,}.jsonl
//
// The tiny Gemma 3 (scripts/models/make_gemma3_gguf.py), its two goldens prompts:
//   printf "p0 1 17 42 99 5 200 3 64\np1 7 7 7 250 0 128\n" |
//       /tmp/llamacpp_reference tests/data/gguf/models/gemma3-f32.gguf \
//       >tests/data/gguf/gemma3_llamacpp.jsonl
//
// AVX2 only: every x86-64 machine of ours gives the same outputs (the Q4_1 tokens recorded on
// 2026-12-01 with an Intel AVX2 build are reproduced exactly). llama.cpp's AVX-512 paths round
// differently and move the top-1 where the margin is small: the files ending in .avx512.jsonl
// are the same commands linked against the default build (scripts/gguf/build_llamacpp.sh,
// -L$L/build/bin).
//
// Recorded 2026-12-02 (Q4_1's tokens first on 2026-12-01), 2 threads, with the llama.cpp of
// llama-cpp-python 0.3.36 (its build reports the commit as unknown; ggml 0.25.3).
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>
#include "llama.h"
// The top-1 id of logits l[0..V) (the first on a tie) and its margin over the runner-up.
static int top1(const float* l, int V, float* margin) {
  int best = 0, second = -1;
  for (int v = 1; v < V; ++v) {
    if (l[v] > l[best])
      second = best, best = v;
    else if (second < 0 || l[v] > l[second])
      second = v;
  }
  *margin = l[best] - l[second];
  return best;
}
static void print_margins(const char* key, const std::vector<float>& m) {
  std::printf(", \"%s\": [", key);
  for (size_t i = 0; i < m.size(); ++i)
    std::printf("%s%.4f", i ? ", " : "", m[i]);
  std::printf("]");
}
int main(int argc, char** argv) {
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  const llama_vocab* vocab = llama_model_get_vocab(model);
  const int V = llama_vocab_n_tokens(vocab);
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string name;
    in >> name;
    std::vector<llama_token> ids;
    int x;
    while (in >> x)
      ids.push_back(x);
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 512;
    cp.n_batch = 512;
    cp.n_threads = 2;
    cp.n_threads_batch = 2;
    llama_context* ctx = llama_init_from_model(model, cp);
    llama_batch b = llama_batch_init(512, 0, 1);
    b.n_tokens = (int)ids.size();
    for (size_t i = 0; i < ids.size(); ++i) {
      b.token[i] = ids[i];
      b.pos[i] = (int)i;
      b.n_seq_id[i] = 1;
      b.seq_id[i][0] = 0;
      b.logits[i] = 1;
    }
    llama_decode(ctx, b);
    std::printf("{\"name\": \"%s\", \"argmax\": [", name.c_str());
    std::vector<float> margin(ids.size()), greedy_margin(32);
    for (size_t i = 0; i < ids.size(); ++i)
      std::printf("%s%d", i ? ", " : "", top1(llama_get_logits_ith(ctx, (int)i), V, &margin[i]));
    std::printf("], \"greedy\": [");
    const float* l = llama_get_logits_ith(ctx, (int)ids.size() - 1);
    int pos = (int)ids.size();
    for (int t = 0; t < 32; ++t) {
      const int best = top1(l, V, &greedy_margin[t]);
      std::printf("%s%d", t ? ", " : "", best);
      b.n_tokens = 1;
      b.token[0] = best;
      b.pos[0] = pos++;
      b.n_seq_id[0] = 1;
      b.seq_id[0][0] = 0;
      b.logits[0] = 1;
      llama_decode(ctx, b);
      l = llama_get_logits_ith(ctx, 0);
    }
    std::printf("]");
    print_margins("margin", margin);
    print_margins("greedy_margin", greedy_margin);
    std::printf("}\n");
    llama_batch_free(b);
    llama_free(ctx);
  }
  llama_model_free(model);
}

// llama.cpp reference for SmolLM2-135M-Instruct: teacher-forced top-1 at every position and a
// 32-token greedy continuation for the prompts of tests/data/gguf/smollm2_reference.json.
//
//   L=llama.cpp source (e.g. the vendor/llama.cpp of the llama-cpp-python 0.3.36 sdist), built with
//   cmake -B build -DLLAMA_CURL=OFF -DGGML_NATIVE=ON && ninja -C build llama-bench (builds
//   libllama)
//   g++ -O2 -std=c++17 -I$L/include -I$L/ggml/include llamacpp_reference.cpp -L$L/build/bin \
//       -lllama -lggml -lggml-base -Wl,-rpath,$L/build/bin -o llamacpp_reference
//   python3 -c "import json; [print(p[\"name\"], *p[\"input_ids\"]) for p in
//   json.load(open(\"tests/data/gguf/smollm2_reference.json\"))[\"prompts\"]]" \
//       | ./llamacpp_reference SmolLM2-135M-Instruct.Q4_1.gguf >
//       tests/data/gguf/smollm2_llamacpp.jsonl
//
// Recorded 2026-12-01 with llama.cpp 0c1e570 on an x86-64 AVX2 CPU, 2 threads.
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>
#include "llama.h"
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
    for (size_t i = 0; i < ids.size(); ++i) {
      const float* l = llama_get_logits_ith(ctx, (int)i);
      int best = 0;
      for (int v = 1; v < V; ++v)
        if (l[v] > l[best]) best = v;
      std::printf("%s%d", i ? ", " : "", best);
    }
    std::printf("], \"greedy\": [");
    const float* l = llama_get_logits_ith(ctx, (int)ids.size() - 1);
    int pos = (int)ids.size();
    for (int t = 0; t < 32; ++t) {
      int best = 0;
      for (int v = 1; v < V; ++v)
        if (l[v] > l[best]) best = v;
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
    std::printf("]}\n");
    llama_batch_free(b);
    llama_free(ctx);
  }
  llama_model_free(model);
}

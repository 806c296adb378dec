#include "luminal/models/causal_lm.hpp"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "luminal/core/error.hpp"
#include "luminal/io/safetensors.hpp"
#include "luminal/models/model_files.hpp"
#include "luminal/models/synthetic.hpp"
#include "luminal/runtime/reference.hpp"
#include "luminal/runtime/session.hpp"

namespace luminal::models {

namespace detail {

// One step's traffic: the ids in, the run, the token id or the logits out.
class Steps {
 public:
  virtual ~Steps() = default;
  /// By-name access for what is not per token: weights, state, the sampler's settings.
  virtual Runtime& runtime() = 0;
  /// Null on the reference.
  virtual Session* session() = 0;
  /// Sets the step's ids (1 to max_step) and runs it; `context` counts the tokens after it.
  virtual void run(std::span<const int32_t> ids, int64_t context) = 0;
  /// The last step's token id.
  virtual int32_t token() = 0;
  /// Appends the last step's logits ([n, vocab]).
  virtual void append_logits(std::vector<float>& out) = 0;
  /// The sampler's step counter (a model with the sampler).
  virtual void set_sampler_step(int64_t step) = 0;
  /// Starts reading the last step's token; finish_token() returns it. A session's read waits
  /// for that step alone, not for a step launched after the start.
  virtual void start_token() = 0;
  virtual int32_t finish_token() = 0;
  /// A one-token step whose id is the last step's token, fed on the backend before the host has
  /// read it (a copy on the device); `context` counts the tokens after it.
  virtual void run_fed(int64_t context) = 0;
};

}  // namespace detail

namespace {

using detail::Steps;

/// Whether generate launches each decode step before the host reads the token it feeds:
/// LUMINAL_DECODE_AHEAD=0/1, else on for every backend but the CPU (a CPU step finishes before it
/// returns, so there it would only compute one step past a stop; on an H100 it took SmolLM2 q4_1's
/// `luminal bench` TPOT from 0.589-0.601 to 0.580-0.581 ms).
/// (`session`: null for a model on the ReferenceRuntime, which runs each step to its end too.)
bool decode_ahead(const Session* session) {
  const char* v = std::getenv("LUMINAL_DECODE_AHEAD");
  if (v != nullptr && std::string_view(v) == "0") return false;
  if (v != nullptr && std::string_view(v) == "1") return true;
  return session != nullptr && session->backend().name() != "cpu";
}

// The fast path: handles and dim slots resolved once, so a step looks nothing up and allocates
// nothing.
class SessionSteps final : public Steps {
 public:
  SessionSteps(const Decoder& d, const TokenHead& head, Backend& backend, CompileOptions options)
      : session_(d.graph, backend, std::move(options)),
        ids_(session_.input(d.ids)),
        token_(session_.output("token")),
        logits_(session_.output(d.logits)),
        dims_(session_.dims()),
        s_(session_.dim("s")),
        c_(session_.dim("c")) {
    if (head.shape.sampler) step_ = session_.input(head.inputs.step);
  }
  Runtime& runtime() override { return session_; }
  Session* session() override { return &session_; }
  void run(std::span<const int32_t> ids, int64_t context) override {
    session_.write(ids_, ids.data(), ids.size_bytes());
    dims_[static_cast<size_t>(s_)] = static_cast<int64_t>(ids.size());
    dims_[static_cast<size_t>(c_)] = context;
    session_.execute(std::span<const int64_t>(dims_));
  }
  int32_t token() override {
    int32_t id = 0;
    session_.read(token_, &id, sizeof id);
    return id;
  }
  void append_logits(std::vector<float>& out) override {
    const uint64_t bytes = session_.output_bytes(logits_);
    const size_t at = out.size();
    out.resize(at + bytes / sizeof(float));
    session_.read(logits_, out.data() + at, bytes);
  }
  void set_sampler_step(int64_t step) override { session_.write(step_, &step, sizeof step); }
  void start_token() override { session_.start_read(token_, &read_, sizeof read_); }
  int32_t finish_token() override {
    session_.finish_read();
    return read_;
  }
  void run_fed(int64_t context) override {
    session_.copy_output_to_input(token_, ids_);
    dims_[static_cast<size_t>(s_)] = 1;
    dims_[static_cast<size_t>(c_)] = context;
    session_.execute(std::span<const int64_t>(dims_));
  }

 private:
  Session session_;
  Session::InputHandle ids_, step_;
  Session::OutputHandle token_, logits_;
  std::vector<int64_t> dims_;
  DimSlot s_, c_;
  int32_t read_ = 0;  // start_token's (a stable address while the copy is in flight)
};

// The reference: the same graph by name (parity tests on tiny models).
class ReferenceSteps final : public Steps {
 public:
  ReferenceSteps(const Decoder& d, const TokenHead& head)
      : rt_(d.graph), ids_(d.ids), step_(head.inputs.step) {}
  Runtime& runtime() override { return rt_; }
  Session* session() override { return nullptr; }
  void run(std::span<const int32_t> ids, int64_t context) override {
    rt_.set(ids_, ids);
    rt_.execute({{"s", static_cast<int64_t>(ids.size())}, {"c", context}});
  }
  int32_t token() override { return rt_.get<int32_t>("token")[0]; }
  void append_logits(std::vector<float>& out) override {
    const std::vector<float> l = rt_.get<float>("logits");
    out.insert(out.end(), l.begin(), l.end());
  }
  void set_sampler_step(int64_t step) override { rt_.set(step_, std::vector<int64_t>{step}); }
  void start_token() override { read_ = token(); }
  int32_t finish_token() override { return read_; }
  void run_fed(int64_t context) override {
    const int32_t id = token();
    run(std::span<const int32_t>(&id, 1), context);
  }

 private:
  ReferenceRuntime rt_;
  Tensor ids_, step_;
  int32_t read_ = 0;  // start_token's
};

ModelFiles weights_only(const std::filesystem::path& path) {
  OpenOptions o;
  o.tokenizer = false;
  return open_model(path, o);
}

/// `shape` with what it leaves to the backend decided: window_read (unset: LUMINAL_WINDOW_READ,
/// else on for the CPU, whose kernels read a cache window at its run-time row offset, so at long
/// contexts the local layers read s + window - 1 rows, not c; off on CUDA until its GPU parity
/// has run: cuda.Attention reads such a window in place, checked on the host only).
DecoderShape for_backend(DecoderShape shape, const Backend& backend) {
  if (!shape.window_read) shape.window_read = window_read_env().value_or(backend.name() == "cpu");
  return shape;
}

// The "s" buckets (decode, prefill) unless `options` has its own.
void set_buckets(CompileOptions& options, const DecoderShape& shape) {
  std::vector<DimBucket> buckets{DimBucket(1, 1)};
  if (shape.max_step > 1) buckets.push_back(DimBucket(2, shape.max_step));
  if (options.dim_buckets().find("s") == options.dim_buckets().end())
    options.dim_buckets("s", buckets);
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

CausalLM::CausalLM() = default;
CausalLM::CausalLM(CausalLM&&) noexcept = default;
CausalLM& CausalLM::operator=(CausalLM&&) noexcept = default;
CausalLM::~CausalLM() = default;

Session& CausalLM::session() {
  if (Session* s = steps_->session()) return *s;
  throw Error(
      "models: this model runs on the ReferenceRuntime (load_reference, random_reference), not "
      "in a Session; use runtime() for its inputs and outputs");
}

Runtime& CausalLM::runtime() { return steps_->runtime(); }

CausalLM CausalLM::build(const io::ModelConfig& config, const DecoderShape& shape,
                         const SamplerShape& head) {
  CausalLM lm;
  lm.decoder_ = build_decoder(config, shape);
  lm.head_ = add_token_head(lm.decoder_, head);
  lm.ids_.reserve(static_cast<size_t>(shape.slots));
  return lm;
}

void CausalLM::start_session(Backend& backend, CompileOptions options) {
  set_buckets(options, decoder_.shape);
  steps_ = std::make_unique<SessionSteps>(decoder_, head_, backend, std::move(options));
}

void CausalLM::start_reference() { steps_ = std::make_unique<ReferenceSteps>(decoder_, head_); }

void CausalLM::reset() {
  ids_.clear();
  written_ = 0;
  head_.clear_seen(runtime(), vocab_size());
}

bool CausalLM::can_rewind(int tokens) const {
  if (tokens < 0 || tokens > context()) return false;
  const int ring = decoder_.ring_rows / 2;  // (the positions the ring holds)
  if (ring == 0 || tokens == 0) return true;
  // The next step reads positions from tokens - window + 1 on; each is still in its ring row
  // unless a later position of its row (p + ring) was written since reset().
  const int64_t lo = std::max<int64_t>(0, tokens - *decoder_.config.sliding_window + 1);
  return lo + ring >= static_cast<int64_t>(written_);
}

void CausalLM::rewind(int tokens) {
  if (tokens < 0 || tokens > context())
    throw Error("models: cannot rewind to " + std::to_string(tokens) +
                " tokens; the context holds " + std::to_string(context()));
  if (!can_rewind(tokens))
    throw Error(
        "models: cannot rewind to " + std::to_string(tokens) + " tokens: the sliding " +
        "layers' ring cache (" + std::to_string(decoder_.ring_rows / 2) +
        " positions, DecoderShape::rolling_cache) no longer holds the positions before it " +
        "that the next step reads; reset() and feed the context again (continue_from " +
        "does), or turn the rolling cache off");
  ids_.resize(static_cast<size_t>(tokens));
}

size_t CausalLM::continue_from(std::span<const int32_t> ids, const SamplingConfig& sampling) {
  const size_t most = std::min(ids_.size(), ids.empty() ? 0 : ids.size() - 1);
  const size_t kept = static_cast<size_t>(
      std::mismatch(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(most), ids.begin())
          .first -
      ids_.begin());
  if (kept == 0 || (kept < ids_.size() && sampling.repetition_penalty != 1) ||
      !can_rewind(static_cast<int>(kept))) {
    reset();
    return 0;
  }
  rewind(static_cast<int>(kept));
  return kept;
}

void CausalLM::bind(std::shared_ptr<const io::Weights> weights, const std::string& source,
                    const io::LoadProgress& progress) {
  io::BindOptions opts;
  opts.require_all_inputs = false;
  opts.progress = progress;
  Session* session = steps_->session();
  io::BindReport r =
      session ? io::bind(*session, weights, opts) : io::bind(runtime(), *weights, opts);
  // Every weight must now be set; the rest (ids, rope table, caches, sampler) is ours.
  for (const std::string& label : r.unset_inputs)
    if (is_weight(label))
      throw Error("models: the checkpoint in '" + source + "' has no tensor '" + label + "'");
  init_inputs();
}

void CausalLM::init_inputs() {
  init_state(runtime(), decoder_);
  head_.set(runtime(), SamplingConfig{}, 0);
  head_.clear_seen(runtime(), vocab_size());
}

CausalLM CausalLM::load(const std::filesystem::path& path, Backend& backend,
                        const DecoderShape& shape, CompileOptions options,
                        const io::LoadProgress& progress, const SamplerShape& head) {
  return load(weights_only(path), backend, shape, std::move(options), progress, head);
}

CausalLM CausalLM::load(const ModelFiles& model, Backend& backend, const DecoderShape& shape,
                        CompileOptions options, const io::LoadProgress& progress,
                        const SamplerShape& head) {
  // Block-quantized weights stay quantized where the backend reads them.
  std::shared_ptr<const io::Weights> weights = open_weights(
      model, options, progress, [&backend](DType t) { return backend.reads_blocks(t); });
  DecoderShape s = for_backend(shape, backend);
  s.block_weights = block_weight_types(*weights);
  // 16-bit matrices of an f32 model stay 16-bit where the backend's matmuls read them.
  if (s.dtype == DType::F32)
    for (const auto& [name, t] : matrix16_types(*weights))
      if (backend.reads_blocks(t)) s.block_weights[name] = t;
  CausalLM lm = build(model.config, s, head);
  lm.start_session(backend, std::move(options));
  lm.bind(std::move(weights), model.path.string(), progress);
  lm.session().compile();
  return lm;
}

CausalLM CausalLM::random(const io::ModelConfig& config, Backend& backend,
                          const DecoderShape& shape, CompileOptions options, uint64_t seed,
                          const SamplerShape& head) {
  CausalLM lm = build(config, for_backend(shape, backend), head);
  lm.start_session(backend, std::move(options));
  random_weights(lm.session(), seed, lm.session().options());
  lm.init_inputs();
  lm.session().compile();
  return lm;
}

CausalLM CausalLM::load_reference(const std::filesystem::path& path, const DecoderShape& shape,
                                  const SamplerShape& head) {
  const ModelFiles model = weights_only(path);
  CausalLM lm = build(model.config, shape, head);
  lm.start_reference();
  lm.bind(open_weights(model, CompileOptions()), model.path.string());
  return lm;
}

CausalLM CausalLM::random_reference(const io::ModelConfig& config, const DecoderShape& shape,
                                    uint64_t seed, const SamplerShape& head) {
  CausalLM lm = build(config, shape, head);
  lm.start_reference();
  random_weights_host(lm.runtime(), seed);
  lm.init_inputs();
  return lm;
}

void CausalLM::run(std::span<const int32_t> ids, std::vector<float>* logits) {
  const int slots = decoder_.shape.slots;
  if (ids_.size() + ids.size() > static_cast<size_t>(slots)) {
    throw Error("models: " + std::to_string(ids_.size()) + " tokens of context plus " +
                std::to_string(ids.size()) + " new ones exceed the cache of " +
                std::to_string(slots) + " (DecoderShape::slots)");
  }
  const auto step = static_cast<size_t>(decoder_.shape.max_step);
  for (size_t done = 0; done < ids.size();) {
    const std::span<const int32_t> chunk = ids.subspan(done, std::min(ids.size() - done, step));
    ids_.insert(ids_.end(), chunk.begin(), chunk.end());
    steps_->run(chunk, static_cast<int64_t>(ids_.size()));
    written_ = std::max(written_, ids_.size());
    done += chunk.size();
    // Logits::Last: each chunk gives its last row; only the last chunk's is the ids' last.
    if (logits && (decoder_.shape.logits == Logits::All || done == ids.size()))
      steps_->append_logits(*logits);
  }
}

std::vector<float> CausalLM::forward(const std::vector<int32_t>& ids) {
  std::vector<float> all;
  run(ids, &all);
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
  head_.check(sampling);
  Generation out;
  if (max_new_tokens <= 0) return out;
  head_.set(runtime(), sampling, 0);
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
  run(prompt, nullptr);
  // At most one token per free cache row, plus the last one (not fed): no reallocation below.
  out.tokens.reserve(std::min(static_cast<size_t>(max_new_tokens),
                              static_cast<size_t>(decoder_.shape.slots) - ids_.size() + 1));
  // Decoding ahead (decode_ahead: on by default off the CPU; greedy heads): the step that feeds
  // token t is launched, with the token copied on the device, before the host reads token t, so the
  // device runs it while the host waits for the copy, decodes text and checks the stops. Generation
  // that stops at token t leaves that step's cache row past the context, where the next step
  // writes again; the context (ids_) holds only the tokens that were to be fed. A sampler's
  // state (its step counter, the tokens it has seen) is per fed token, so a head with a sampler
  // takes the steps one after another.
  const bool ahead_on = decode_ahead(steps_->session()) && !has_sampler();
  auto launch_ahead = [&](int t) {
    if (!ahead_on || t + 1 >= max_new_tokens ||
        ids_.size() + 1 > static_cast<size_t>(decoder_.shape.slots))
      return false;
    steps_->run_fed(static_cast<int64_t>(ids_.size()) + 1);
    written_ = std::max(written_, ids_.size() + 1);
    return true;
  };
  steps_->start_token();
  bool ahead = launch_ahead(0);
  int32_t next = steps_->finish_token();
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
    if (ahead) {
      ids_.push_back(next);  // (the step launched ahead fed it)
    } else {
      // The decode step: the step counter and the id by handle, a dims array, the id back.
      if (has_sampler()) steps_->set_sampler_step(t + 1);
      run(std::span<const int32_t>(&next, 1), nullptr);
    }
    steps_->start_token();
    ahead = launch_ahead(t + 1);
    next = steps_->finish_token();
  }
  return out;
}

std::vector<int32_t> CausalLM::generate_greedy(const std::vector<int32_t>& prompt, int n) {
  return generate(prompt, n).tokens;
}

}  // namespace luminal::models

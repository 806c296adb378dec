#include "luminal/runtime/residency.hpp"

#include <algorithm>
#include <random>

#include "luminal/core/blocks.hpp"
#include "luminal/core/error.hpp"
#include "luminal/runtime/host_buffer.hpp"

namespace luminal {

namespace {

// Fills host memory with data safe to profile on: floats in [-0.5, 0.5] (no overflow through
// exp or products), integers and bools 0 (a valid index for every gather and scatter).
std::vector<uint8_t> generated_data(DType dt, uint64_t bytes, uint64_t seed) {
  std::vector<uint8_t> v(bytes, 0);
  if (is_block(dt)) {
    blocks::fill_valid_blocks(dt, v, seed);
    return v;
  }
  if (!is_float(dt)) return v;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  const int64_t n = static_cast<int64_t>(bytes) / size_bytes(dt);
  for (int64_t i = 0; i < n; ++i)
    store_from_double(dt, v.data(), i, u(rng));
  return v;
}

// Values in `bytes` of dt (whole blocks' worth for a block type).
std::string elements(uint64_t bytes, DType dt) {
  return std::to_string(bytes / static_cast<uint64_t>(block_bytes(dt)) *
                        static_cast<uint64_t>(block_size(dt)));
}

}  // namespace

Residency::Residency(const Graph& g, const std::vector<std::string>& dim_names,
                     const std::vector<Facts>& facts) {
  auto slot = [&](NodeId id) {
    const Node& n = g.node(id);
    const Expr bytes = storage_bytes(n.dtype, n.shape);
    int64_t most = 0;
    for (const Facts& f : facts)
      most = std::max(most, bytes.bounds(f).hi);
    return Slot{id, n.label, n.dtype, n.shape, static_cast<uint64_t>(most), Buffer{}};
  };
  in_of_node.assign(g.nodes().size(), -1);
  out_of_node.assign(g.nodes().size(), -1);
  for (NodeId id : g.inputs()) {
    In i;
    static_cast<Slot&>(i) = slot(id);
    i.numel = SlotExpr(numel(i.shape), dim_names);
    in_of_node[id] = static_cast<int>(in.size());
    in.push_back(std::move(i));
  }
  for (NodeId id : g.outputs()) {
    Out o;
    static_cast<Slot&>(o) = slot(id);
    for (const Expr& d : o.shape)
      o.shape_slots.emplace_back(d, dim_names);
    out_of_node[id] = static_cast<int>(out.size());
    out.push_back(std::move(o));
  }
  for (auto [o, i] : g.carried()) {
    carries.emplace_back(out_of_node[o], in_of_node[i]);
    in[in_of_node[i]].carried = true;
  }
  dims_.assign(dim_names.size(), 0);
}

Residency::~Residency() {
  queue_.reset();  // waits for its work: no buffer is in use after this
  for (Buffer& b : pool_)
    backend_->release(b);
}

void Residency::attach(Backend& backend) {
  backend_ = &backend;
  queue_ = backend.make_queue();
  for (In& i : in)
    i.buf = allocate(i.capacity);
  for (Out& o : out)
    o.buf = allocate(o.capacity);
}

Buffer Residency::allocate(uint64_t bytes) {
  pool_.push_back(backend_->allocate(bytes));
  return pool_.back();
}

void Residency::release(Buffer b) {
  auto it = std::find(pool_.begin(), pool_.end(), b);
  if (it == pool_.end()) return;
  backend_->release(b);
  pool_.erase(it);
}

uint64_t Residency::capacity_bytes() const {
  uint64_t total = 0;
  for (const In& i : in)
    total += i.capacity;
  for (const Out& o : out)
    total += o.capacity;
  return total;
}

uint64_t Residency::memory_bytes() const {
  uint64_t total = 0;
  for (const In& i : in)
    if (!i.released) total += i.external ? i.buf.bytes : i.capacity;
  for (const Out& o : out)
    total += o.capacity;
  return total;
}

void Residency::drop_values_in(int k, const Out* keep, bool rescue) {
  In& i = in[k];
  for (Out& o : out) {
    if (&o == keep || o.lives_in != k) continue;
    if (rescue && o.capacity == i.capacity && !i.external)
      std::swap(o.buf, i.buf);
    else
      o.valid = false;
    o.lives_in = -1;
  }
}

void Residency::own(int k, Buffer b) {
  In& i = in[k];
  i.keep_alive.reset();
  i.external = false;
  i.bound_external = false;
  i.released = false;
  i.buf = b;
}

void Residency::prepare_write(int k) {
  drop_values_in(k, nullptr, /*rescue=*/true);
  if (in[k].external || in[k].released) own(k, allocate(in[k].capacity));
}

uint64_t Residency::release_input(int k) {
  In& i = in[k];
  if (i.released) return 0;
  drop_values_in(k);
  const uint64_t bytes = i.external ? i.buf.bytes : i.capacity;
  if (!i.external) release(i.buf);
  i.keep_alive.reset();
  i.external = false;
  i.bound_external = false;
  i.buf = Buffer{};
  i.released = true;
  i.has_data = false;
  return bytes;
}

void Residency::use_external(int k, Buffer b, bool bound, std::shared_ptr<const void> keep_alive,
                             uint64_t bytes_set) {
  drop_values_in(k);
  In& i = in[k];
  if (!i.external && !i.released) release(i.buf);  // the memory is used in place from now on
  i.released = false;
  i.buf = b;
  i.external = true;
  i.bound_external = bound;
  i.keep_alive = std::move(keep_alive);
  i.bytes_set = bytes_set;
  i.has_data = true;
}

void Residency::write(int k, const void* data, uint64_t bytes) {
  In& i = in[k];
  detail::require_whole_units(i.label, i.dtype, bytes);
  if (bytes > i.capacity) {
    throw Error("input '" + i.label + "' was given " + elements(bytes, i.dtype) +
                " elements, more than its shape " + shape_to_string(i.shape) +
                " holds at the largest dims (" + elements(i.capacity, i.dtype) + ")");
  }
  prepare_write(k);
  backend_->upload(i.buf, 0, data, bytes, queue_.get());
  i.bytes_set = bytes;
  i.has_data = true;
}

uint64_t Residency::copy_value(int k, const Residency& from, int o, const char* op,
                               const char* run_first) {
  const Out& src = from.out[o];
  In& i = in[k];
  if (!src.valid)
    throw Error(std::string(op) + ": output '" + src.label + "' has no value yet: " + run_first);
  if (src.dtype != i.dtype)
    throw Error(std::string(op) + ": output '" + src.label + "' is " +
                std::string(name(src.dtype)) + " but input '" + i.label + "' is " +
                std::string(name(i.dtype)));
  const uint64_t bytes = from.value_bytes(o);
  if (bytes > i.capacity)
    throw Error(std::string(op) + ": output '" + src.label + "' has " + elements(bytes, src.dtype) +
                " elements, more than input '" + i.label + "' holds (" +
                elements(i.capacity, i.dtype) + ")");
  // Another session's output is written on its queue: finish that work before copying (this
  // queue orders its own).
  if (&from != this) from.backend_->sync(from.queue_.get());
  // (the value's buffer taken before the input's changes: an output living in input k is rescued
  // by prepare_write, and a copy onto itself does nothing)
  const Buffer value = from.value_buffer(o);
  prepare_write(k);
  backend_->copy(i.buf, value, bytes, queue_.get());
  i.bytes_set = bytes;
  i.has_data = true;
  return bytes;
}

uint64_t Residency::copy_from(int k, const Residency& from, int o) {
  return copy_value(k, from, o, "set_from", "execute its session first");
}

uint64_t Residency::copy_in(int k, int o) {
  return copy_value(k, *this, o, "copy_output_to_input", "call execute() first");
}

bool Residency::wrap_host(int k, const void* data, uint64_t bytes,
                          std::shared_ptr<const void> keep_alive) {
  const In& i = in[k];
  detail::require_whole_units(i.label, i.dtype, bytes);
  if (i.carried) return false;  // carried state is written in place: keep our own copy
  // Only a value filling the whole buffer is used in place: the search may time a bucket at
  // larger dims than the value was set for, reading past it.
  const Buffer wrapped = bytes == i.capacity ? backend_->wrap_host(data, bytes) : Buffer{};
  if (!wrapped) return false;
  use_external(k, wrapped, /*bound=*/false, std::move(keep_alive), bytes);
  return true;
}

void Residency::bind_external(int k, void* ptr, uint64_t bytes,
                              std::shared_ptr<const void> keep_alive) {
  const In& i = in[k];
  auto fail = [&](const std::string& why) {
    throw Error("bind_external: input '" + i.label + "': " + why);
  };
  if (ptr == nullptr) fail("the pointer is null");
  if (reinterpret_cast<uintptr_t>(ptr) % 16 != 0)
    fail("the pointer is not 16-byte aligned; pass an aligned buffer (or copy it with set())");
  // Carried state need only hold its value at the dims it runs at (checked at each execute): the
  // search times carried inputs on scratch copies, never on this memory.
  if (bytes < i.capacity && !i.carried)
    fail(std::to_string(bytes) + " bytes is less than the input takes at its largest dims (" +
         std::to_string(i.capacity) + " bytes: " + elements(i.capacity, i.dtype) + " " +
         std::string(name(i.dtype)) +
         " elements); pass a larger buffer, or narrow the dims' ranges");
  try {
    backend_->check_external(ptr, bytes);
  } catch (const Error& e) {
    fail(std::string(e.what()) + "; or set the value with set()");
  }
  use_external(k, Buffer{ptr, bytes}, /*bound=*/true, std::move(keep_alive),
               std::min(bytes, i.capacity));
}

void Residency::hand_off(int o, int k) {
  Out& src = out[o];
  In& i = in[k];
  if (!src.valid)
    throw Error("hand_off: output '" + src.label + "' has no value yet: call execute() first");
  if (src.lives_in == k) return;  // already there
  const uint64_t bytes = value_bytes(o);
  drop_values_in(k, &src);  // other outputs reading the input's old value lose it
  if (i.external || i.released) own(k, allocate(i.capacity));
  if (src.lives_in >= 0)  // the value sits in another input's buffer (updated in place): copy it
    backend_->copy(i.buf, in[src.lives_in].buf, bytes, queue_.get());
  else
    std::swap(i.buf, src.buf);
  src.lives_in = k;
  i.bytes_set = bytes;
  i.has_data = true;
}

void Residency::check_inputs(std::span<const int64_t> dims) const {
  for (const In& i : in) {
    if (i.released) continue;  // only load-time folds read it, and they hold its value
    if (!i.has_data) {
      throw Error("input '" + i.label + "' has no data: call runtime.set(\"" + i.label +
                  "\", ...) before execute()");
    }
    if (i.numel.is_const()) continue;
    const uint64_t want = storage_bytes(i.dtype, i.numel.eval(dims.data()));
    if (i.bound_external ? want > i.bytes_set : want != i.bytes_set) {
      throw Error("input '" + i.label + "' was given " + elements(i.bytes_set, i.dtype) +
                  " elements but its shape " + shape_to_string(i.shape) + " needs " +
                  elements(want, i.dtype) + " at these dims");
    }
  }
}

void Residency::executed(std::span<const int64_t> dims, const std::vector<int>& out_in_place) {
  std::copy(dims.begin(), dims.end(), dims_.begin());
  for (size_t o = 0; o < out.size(); ++o) {
    out[o].lives_in = out_in_place[o];
    out[o].valid = true;
  }
  // Carried state: swap handles (an in-place update needs nothing). Memory the caller bound
  // (bind_external) is the state itself: it takes a copy of the value instead.
  for (auto [o, k] : carries) {
    Out& src = out[o];
    In& i = in[k];
    if (src.lives_in == k) continue;
    if (i.bound_external) {
      backend_->copy(i.buf, src.buf, value_bytes(o), queue_.get());
      continue;
    }
    std::swap(i.buf, src.buf);
    src.lives_in = k;
    i.bytes_set = storage_bytes(i.dtype, i.numel.eval(dims.data()));
  }
}

uint64_t Residency::value_bytes(int o) const {
  int64_t n = 1;
  for (const SlotExpr& d : out[o].shape_slots)
    n *= d.eval(dims_.data());
  return storage_bytes(out[o].dtype, n);
}

Buffer Residency::value_buffer(int o) const {
  return out[o].lives_in >= 0 ? in[out[o].lives_in].buf : out[o].buf;
}

void Residency::check_value(int o, uint64_t bytes, const char* op) const {
  const Out& src = out[o];
  if (!src.valid)
    throw Error("get: output '" + src.label + "' has no value yet: call execute() first");
  if (bytes != value_bytes(o))
    throw Error(std::string(op) + ": output '" + src.label + "' holds " +
                std::to_string(value_bytes(o)) + " bytes at the last execute's dims, not " +
                std::to_string(bytes));
}

void Residency::read(int o, void* dst, uint64_t bytes) const {
  check_value(o, bytes, "read");
  backend_->sync(queue_.get());
  backend_->download(dst, value_buffer(o), 0, bytes, queue_.get());
}

void Residency::start_read(int o, void* dst, uint64_t bytes) const {
  check_value(o, bytes, "start_read");
  backend_->start_download(dst, value_buffer(o), 0, bytes, queue_.get());
}

void Residency::finish_read() const { backend_->finish_download(queue_.get()); }

void Residency::copy_out(int o, void* dst, uint64_t bytes, bool wait) const {
  check_value(o, bytes, "copy_output");
  if (bytes == 0) return;
  try {
    backend_->check_external(dst, bytes);
  } catch (const Error& e) {
    throw Error("copy_output: output '" + out[o].label + "': " + e.what());
  }
  backend_->copy(Buffer{dst, bytes}, value_buffer(o), bytes, queue_.get());
  if (wait) backend_->sync(queue_.get());
}

std::vector<int64_t> Residency::shape(int o) const {
  if (!out[o].valid)
    throw Error("get: output '" + out[o].label + "' has no value yet: call execute() first");
  // From the dims of the last execute, on the host: no wait for the device.
  std::vector<int64_t> shape;
  for (const SlotExpr& d : out[o].shape_slots)
    shape.push_back(d.eval(dims_.data()));
  return shape;
}

ProfileData Residency::profile_data(std::vector<Buffer>* scratch, uint64_t* generated) {
  ProfileData data;
  Backend& be = *backend_;
  // Generated data for input i's bytes from `offset` to its capacity, into `dst`.
  auto generate = [&](Buffer dst, const In& i, uint64_t offset, uint64_t seed) {
    std::vector<uint8_t> bytes = generated_data(i.dtype, i.capacity - offset, seed);
    be.upload(dst, offset, bytes.data(), bytes.size(), queue_.get());
    *generated += bytes.size();
  };
  auto copy = [&](const In& i, uint64_t seed) {
    Buffer c = allocate(i.capacity);
    scratch->push_back(c);
    // Caller memory (bind_external) may hold less than the largest dims need: the rest of the
    // scratch copy gets generated data.
    const uint64_t n = i.external ? std::min(i.capacity, i.buf.bytes) : i.capacity;
    be.copy(c, i.buf, n, queue_.get());
    if (n < i.capacity) generate(c, i, n, seed);
    return c;
  };
  for (size_t k = 0; k < in.size(); ++k) {
    const In& i = in[k];
    if (!i.has_data) {
      generate(i.buf, i, 0, 0x5eed + k);
    } else if (i.bytes_set < i.capacity && !i.external) {
      // Set for smaller dims than a bucket is timed at: the tail gets generated data too (it is
      // past the value the user set, so nothing visible changes).
      generate(i.buf, i, i.bytes_set, 0x5eed + k);
    }
    data.inputs[i.label] = i.has_data && i.carried ? copy(i, 0x5eed + k) : i.buf;
  }
  for (Out& o : out) {
    data.outputs[o.label] = o.buf;
    o.valid = false;
    o.lives_in = -1;
  }
  // The search runs on the backend's default queue: what this session's queue wrote (set,
  // generated data, scratch copies) must have landed first. The search returns with the default
  // queue idle (Backend::time), so nothing is needed afterwards.
  be.sync(queue_.get());
  return data;
}

}  // namespace luminal

#include "luminal/cuda/codegen.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "luminal/core/error.hpp"
#include "luminal/cuda/prelude.hpp"

namespace luminal::cuda {

namespace {

constexpr int64_t kNarrowLimit = (int64_t{1} << 31) - (int64_t{1} << 25);

int64_t sat_add(int64_t a, int64_t b) {
  if (a == INT64_MAX || b == INT64_MAX) return INT64_MAX;
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return INT64_MAX;
  return r;
}

}  // namespace

int64_t view_max_offset(const View& v, const Facts& facts) {
  int64_t total = 0;
  if (v.has_base()) {
    const Interval b = v.base.bounds(facts);
    if (b.hi == INT64_MAX || b.lo == INT64_MIN) return INT64_MAX;
    total = std::max<int64_t>(std::max(b.hi, -b.lo), 0);
  }
  for (int k = 0; k < v.rank(); ++k) {
    const Interval d = v.dims[k].bounds(facts);
    if (d.hi == INT64_MAX) return INT64_MAX;
    if (d.hi <= 0) return 0;  // no element
    Facts f = facts;
    f["z"] = Interval{0, d.hi - 1};
    const Interval s = v.strides[k].bounds(f);
    if (s.hi == INT64_MAX || s.lo == INT64_MIN) return INT64_MAX;
    total = sat_add(total, std::max<int64_t>(std::max(s.hi, -s.lo), 0));
  }
  return total;
}

bool aligned_chunks(const View& v, int axis, int width) {
  if (width <= 1) return true;
  if (!(v.strides[axis] == Expr::z())) return false;
  if (!v.dims[axis].is_const() || v.dims[axis].as_const() % width != 0) return false;
  // The first element must start a vector too.
  if (v.has_base() && !(v.base.is_const() && v.base.as_const() % width == 0)) return false;
  for (int k = 0; k < v.rank(); ++k) {
    if (k == axis || v.strides[k] == Expr(0) || v.dims[k] == Expr(1)) continue;
    const auto lin = v.strides[k].as_linear("z");
    if (!lin || lin->second != Expr(0) || !lin->first.is_const() ||
        lin->first.as_const() % width != 0)
      return false;
  }
  return true;
}

int vector_width(const View& v, int axis, DType t) {
  const int width = 16 / size_bytes(t);
  return aligned_chunks(v, axis, width) ? width : 1;
}

std::string lines(std::initializer_list<std::string> ls) {
  std::string r;
  for (const std::string& l : ls)
    r += l + "\n";
  return r;
}

void require_sixteen_bit_output(const LlirNode& n) {
  if (n.attrs.dtype != DType::BF16 && n.attrs.dtype != DType::F16)
    throw Error(std::string(n.op->name) + ": the output must be bf16 or f16, got " +
                std::string(name(n.attrs.dtype)));
}

std::string operand_load(DType t, const std::string& e) {
  return (sixteen_bit_float(t) || t == DType::F32 ? "ldm_" : "ld_") + dtype_tag(t) + "(" + e + ")";
}

std::string product_add(DType product_t, DType ta, DType tb, const std::string& a,
                        const std::string& b, const std::string& acc) {
  if (product_t == DType::F32 && sixteen_bit_float(ta) && sixteen_bit_float(tb))
    return "__fmaf_rn(" + a + ", " + b + ", " + acc + ")";
  return acc + " + rd_" + dtype_tag(product_t) + "(" + a + " * " + b + ")";
}

bool env_switch_on(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr || std::string(v) != "0";
}

bool env_opt_in(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && std::string(v) == "1";
}

int env_int(const char* name, int fallback, int lo, int hi) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == 0) return fallback;
  errno = 0;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (errno != 0 || end == v || *end != 0 || x < lo || x > hi)
    throw Error(std::string(name) + "=" + v + " is not a whole number in range; give " +
                std::to_string(lo) + " to " + std::to_string(hi));
  return static_cast<int>(x);
}

std::string vector_type(int bytes) {
  switch (bytes) {
    case 16: return "uint4";
    case 8: return "uint2";
    case 4: return "unsigned int";
    case 2: return "unsigned short";
    case 1: return "unsigned char";
    default: break;
  }
  throw Error("cuda: no vector type of " + std::to_string(bytes) + " bytes");
}

namespace {

std::string math(FusedOpcode op, DType t, const std::string& x) {
  const bool dbl = t == DType::F64;
  switch (op) {
    case FusedOpcode::Exp2: return (dbl ? "exp2(" : "exp2f(") + x + ")";
    case FusedOpcode::Log2: return (dbl ? "log2(" : "log2f(") + x + ")";
    case FusedOpcode::Sin: return (dbl ? "sin(" : "sinf(") + x + ")";
    case FusedOpcode::Recip: return (dbl ? "1.0 / " : "1.0f / ") + x;
    case FusedOpcode::Sqrt: return (dbl ? "sqrt(" : "sqrtf(") + x + ")";
    default: break;
  }
  LUMINAL_ASSERT(false, "cuda: not a unary math opcode");
  return x;
}

std::string binary(FusedOpcode op, DType t, const std::string& a, const std::string& b) {
  const bool integral = !is_float(t);
  const bool dbl = t == DType::F64;
  switch (op) {
    case FusedOpcode::Add: return integral ? "wrap_add(" + a + ", " + b + ")" : a + " + " + b;
    case FusedOpcode::Mul: return integral ? "wrap_mul(" + a + ", " + b + ")" : a + " * " + b;
    case FusedOpcode::Mod:
      return integral ? "int_mod(" + a + ", " + b + ")"
                      : std::string(dbl ? "fmod(" : "fmodf(") + a + ", " + b + ")";
    default: break;
  }
  LUMINAL_ASSERT(false, "cuda: not a binary arithmetic opcode");
  return a;
}

}  // namespace

std::string unrounded_code(const FusedInst& in, bool* rounded) {
  auto operand = [&](int k) { return "v" + std::to_string(k); };
  *rounded = true;
  switch (in.op) {
    case FusedOpcode::Const: return literal(in.dtype, in.value, in.int_value);
    case FusedOpcode::Cast: return operand(in.a);
    case FusedOpcode::LessThan:
      *rounded = false;
      return "(long long)(" + operand(in.a) + " < " + operand(in.b) + ")";
    case FusedOpcode::Select:
      *rounded = false;
      return "(" + operand(in.a) + " != 0) ? " + operand(in.b) + " : " + operand(in.c);
    default: break;
  }
  if (is_unary_math(in.op)) {
    if (!is_float(in.dtype))
      throw Error("cuda: " + std::string(opcode_name(in.op)) + " needs a float dtype, got " +
                  std::string(name(in.dtype)));
    return math(in.op, in.dtype, operand(in.a));
  }
  if (is_binary(in.op)) return binary(in.op, in.dtype, operand(in.a), operand(in.b));
  throw Error("cuda: no expression for instruction " + std::string(opcode_name(in.op)));
}

bool sixteen_bit_float(DType t) { return t == DType::BF16 || t == DType::F16; }

bool fast_nan() { return env_switch_on("LUMINAL_CUDA_FAST_NAN"); }

std::string inst_code(const FusedInst& in, bool keep_nan_payload) {
  bool rounded = false;
  const std::string e = unrounded_code(in, &rounded);
  if (!rounded) return e;
  const bool fast = !keep_nan_payload && sixteen_bit_float(in.dtype) && fast_nan();
  return (fast ? "rdm_" : "rd_") + dtype_tag(in.dtype) + "(" + e + ")";
}

std::vector<bool> nan_payload_kept(const FusedProgram& prog) {
  std::vector<bool> keep(prog.insts.size(), false);
  if (keep.empty()) return keep;
  keep.back() = true;
  // Operands come before their users: one pass from the root down.
  for (size_t j = keep.size(); j-- > 0;) {
    if (!keep[j]) continue;
    const FusedInst& in = prog.insts[j];
    if (in.op == FusedOpcode::Cast && is_float(in.dtype) && is_float(prog.insts[in.a].dtype))
      keep[in.a] = true;
    if (in.op == FusedOpcode::Select) {
      keep[in.b] = true;
      keep[in.c] = true;
    }
  }
  return keep;
}

std::string load_fn(DType t, bool keep_nan_payload) {
  const bool fast = !keep_nan_payload && sixteen_bit_float(t) && fast_nan();
  return (fast ? "ldm_" : "ld_") + dtype_tag(t);
}

std::string ReduceAcc::type() const { return integral() ? "long long" : "double"; }

std::string ReduceAcc::init() const {
  if (!is_max) return "(" + type() + ")0";
  return integral() ? literal(DType::I64, 0, static_cast<int64_t>(min_value(in)))
                    : "__longlong_as_double(0xFFF0000000000000LL)";
}

std::string ReduceAcc::combine(const std::string& a, const std::string& b) const {
  if (is_max) return "lmn_max(" + a + ", " + b + ")";
  return integral() ? "wrap_add(" + a + ", " + b + ")" : a + " + " + b;
}

std::string literal(DType t, double value, int64_t int_value) {
  char buf[64];
  if (t == DType::Bool) return value != 0 ? "1LL" : "0LL";
  if (!is_float(t)) return "((long long)" + std::to_string(int_value) + "LL)";
  if (t == DType::F64) {
    if (value != value) return "__longlong_as_double(0x7FF8000000000000LL)";
    if (value == INFINITY) return "__longlong_as_double(0x7FF0000000000000LL)";
    if (value == -INFINITY) return "__longlong_as_double(0xFFF0000000000000LL)";
    std::snprintf(buf, sizeof buf, "%a", value);
    return std::string("(") + buf + ")";
  }
  const float f = static_cast<float>(value);
  if (f != f) return "__int_as_float(0x7FC00000)";
  if (f == INFINITY) return "__int_as_float(0x7F800000)";
  if (f == -INFINITY) return "__int_as_float((int)0xFF800000)";
  std::snprintf(buf, sizeof buf, "%af", static_cast<double>(f));
  return std::string("(") + buf + ")";
}

Codegen::Codegen(const LlirNode& node, const GenContext& ctx) : node_(node), ctx_(ctx) {
  require(numel(node.attrs.shape));
  for (const View& v : node.attrs.views) {
    require(v.numel());
    if (view_max_offset(v, ctx.facts) >= kNarrowLimit) wide_ = true;
  }
  if (ctx.row_prologue)  // (the row's offsets are computed in this kernel too)
    for (const View& v : ctx.row_prologue->row->attrs.views)
      if (view_max_offset(v, ctx.facts) >= kNarrowLimit) wide_ = true;
  if (wide_) idx_ = "long long";
  if (ctx.scatter_store) {
    require(ctx.scatter_store->count);
    scatter_count_ = c(ctx.scatter_store->count);
  }
}

void Codegen::require(const Expr& e) {
  if (e.bounds(ctx_.facts).hi >= kNarrowLimit) {
    wide_ = true;
    idx_ = "long long";
  }
}

std::string Codegen::c(const Expr& e, const std::string& z_name, const Expr& z_dim) {
  Facts f = ctx_.facts;
  if (!z_name.empty()) {
    const Interval d = z_dim.bounds(ctx_.facts);
    f["z"] = Interval{0, std::max<int64_t>(d.hi == INT64_MAX ? INT64_MAX : d.hi - 1, 0)};
  }
  for (const std::string& v : e.vars())
    if (v != "z") used_.insert(slot_of(v));
  const std::string s = e.to_c(f, [&](const std::string& v) {
    return v == "z" ? z_name : "d" + std::to_string(slot_of(v));
  });
  return "((" + idx_ + ")(" + s + "))";
}

int Codegen::slot_of(const std::string& dim) const {
  const auto it = std::find(ctx_.dims.begin(), ctx_.dims.end(), dim);
  if (it == ctx_.dims.end())
    throw Error("cuda: the program uses dynamic dimension '" + dim +
                "' but the plan has no slot for it");
  return static_cast<int>(it - ctx_.dims.begin());
}

std::string Codegen::axis_offset(const View& v, int axis, const std::string& index) {
  const Expr& s = v.strides[axis];
  if (s == Expr(0)) return "0";
  return c(s, index, v.dims[axis]);
}

std::string Codegen::view_offset(const View& v, const std::string& flat, const std::string& name,
                                 std::string& body, int skip) {
  std::vector<int> axes;
  for (int k = 0; k < v.rank(); ++k)
    if (k != skip) axes.push_back(k);
  // Identity view over all axes: the offset is the flat index.
  if (skip < 0 && v.is_contiguous()) {
    body += "    const " + idx_ + " " + name + " = " + flat + ";\n";
    return name;
  }
  // The view's element offset (of index 0) starts the sum; axis `skip` adds none.
  body +=
      "    " + idx_ + " " + name + " = " + (v.has_base() ? c(v.base) : std::string("0")) + ";\n";
  body += "    { " + idx_ + " r_ = " + flat + ";\n";
  for (int j = static_cast<int>(axes.size()) - 1; j >= 0; --j) {
    const int k = axes[j];
    const bool last = j == 0;
    const bool unit = v.dims[k] == Expr(1);
    const std::string ix = name + "_i" + std::to_string(k);
    if (unit) {
      continue;  // index 0: contributes s(0) = 0
    }
    const std::string d = c(v.dims[k]);
    if (last)
      body += "      const " + idx_ + " " + ix + " = r_;\n";
    else
      body += "      const " + idx_ + " " + ix + " = r_ % " + d + "; r_ /= " + d + ";\n";
    const std::string off = axis_offset(v, k, ix);
    if (off != "0") body += "      " + name + " += " + off + ";\n";
  }
  body += "    }\n";
  return name;
}

std::string Codegen::params(bool restrict_ptrs) const {
  const std::string r = restrict_ptrs ? " __restrict__ " : " ";
  const ScatterStore* ss = ctx_.scatter_store;
  std::string p = "S_" + dtype_tag(node_.attrs.dtype) + "*" + r + (ss ? "lmn_out" : "out");
  const RowPrologue* rp = ctx_.row_prologue;
  for (size_t k = 0; k < node_.inputs.size(); ++k) {
    DType t = k < node_.input_dtypes.size() ? node_.input_dtypes[k] : node_.attrs.dtype;
    if (k == 0 && rp) t = rp->row->input_dtypes.at(0);
    p += ", const S_" + dtype_tag(t) + "*" + r + "in" + std::to_string(k);
  }
  if (ss) {  // the destination (the output's own buffer when in place) and the indexes
    const size_t k = node_.inputs.size();
    p += ", const S_" + dtype_tag(node_.attrs.dtype) + "* in" + std::to_string(k) + ", const S_" +
         dtype_tag(ss->index_dtype) + "*" + r + "in" + std::to_string(k + 1);
  }
  if (rp)  // the row's other inputs
    for (size_t i = 1; i < rp->row->input_dtypes.size(); ++i)
      p += ", const S_" + dtype_tag(rp->row->input_dtypes[i]) + "*" + r + rp->inputs.at(i);
  p += ", const long long* __restrict__ dims, unsigned int* __restrict__ err";
  return p;
}

std::string Codegen::dims_prologue(const std::string& before_wait) const {
  // (the dims are copied before the graph launches, so reading them before the wait is safe)
  // LUMINAL_CUDA_DIMS_EARLY=1 (opt-in, not yet timed on a GPU): every kernel reads its dims
  // before the wait, so a dim's load (the attention's context length ahead of its K/V loads)
  // overlaps the kernel before instead of following it.
  const bool early = !before_wait.empty() || env_opt_in("LUMINAL_CUDA_DIMS_EARLY");
  std::string s = early ? "" : "  lmn_pdl();\n";
  for (int d : used_)
    s += "  const " + idx_ + " d" + std::to_string(d) + " = (" + idx_ + ")dims[" +
         std::to_string(d) + "];\n";
  s += "  (void)err;\n";
  if (const ScatterStore* ss = ctx_.scatter_store) {
    const std::string ot = dtype_tag(node_.attrs.dtype);
    s += "  const lmn_scatter_out<S_" + ot + ", S_" + dtype_tag(ss->index_dtype) +
         "> out{lmn_out, in" + std::to_string(node_.inputs.size() + 1) + ", (long long)(" +
         scatter_count_ + ")};\n";
  }
  if (early) s += before_wait + "  lmn_pdl();\n";
  return s;
}

std::string Codegen::unit(const std::string& kernels) { return device_prelude() + kernels; }

std::string emit_statements(
    const FusedProgram& prog, std::string& body,
    const std::function<std::string(const FusedInst&, size_t, bool)>& load) {
  const std::vector<bool> keep = nan_payload_kept(prog);
  for (size_t j = 0; j < prog.insts.size(); ++j) {
    const FusedInst& in = prog.insts[j];
    const std::string rhs =
        in.op == FusedOpcode::Load ? load(in, j, keep[j]) : inst_code(in, keep[j]);
    body += "    const C_" + dtype_tag(in.dtype) + " v" + std::to_string(j) + " = " + rhs + ";\n";
  }
  return "v" + std::to_string(prog.insts.size() - 1);
}

}  // namespace luminal::cuda

// Recognising ReLU and the tanh GELU in fused programs (see lt_activation.hpp).
#include "luminal/cuda/cublaslt/lt_activation.hpp"

#include <cmath>
#include <numbers>
#include <vector>

namespace luminal::cuda {

namespace {

/// Whether a cast from `from` to `to` may be set aside in a program whose result has dtype
/// `out`: a widening to f32 or f64 (exact from the 16-bit types), or a rounding to the result's
/// own type (the epilogue's one rounding to D). A rounding to anything narrower (FP8, f16 in an
/// f32 program) changes values and is not an activation's.
bool cast_set_aside(DType from, DType to, DType out) {
  if (!is_float(from) || !is_float(to)) return false;
  const bool exact_widening = (to == DType::F32 && (from == DType::F32 || from == DType::F16 ||
                                                    from == DType::BF16 || from == DType::TF32)) ||
                              to == DType::F64;
  return exact_widening || to == out;
}

/// Evaluates instructions in double: with `x` the value of load 0; without it, constants only
/// (nothing for an instruction that reads a load).
class Eval {
 public:
  Eval(const FusedProgram& p, std::optional<double> x)
      : p_(p), x_(x), memo_(p.insts.size()), done_(p.insts.size(), false) {}

  std::optional<double> at(int i) {
    if (i < 0 || i >= static_cast<int>(p_.insts.size())) return std::nullopt;
    const auto u = static_cast<size_t>(i);
    if (!done_[u]) {
      memo_[u] = compute(p_.insts[u]);
      done_[u] = true;
    }
    return memo_[u];
  }

 private:
  std::optional<double> compute(const FusedInst& in) {
    const bool boolean = in.dtype == DType::Bool;
    switch (in.op) {
      case FusedOpcode::Load:
        if (in.a != 0 || !x_) return std::nullopt;
        return *x_;
      case FusedOpcode::Const:
        return is_float(in.dtype) || boolean ? in.value : static_cast<double>(in.int_value);
      case FusedOpcode::Cast: {
        const std::optional<double> a = at(in.a);
        if (!a || !cast_set_aside(p_.insts[static_cast<size_t>(in.a)].dtype, in.dtype,
                                  p_.insts.back().dtype))
          return std::nullopt;
        return a;
      }
      case FusedOpcode::Exp2:
      case FusedOpcode::Log2:
      case FusedOpcode::Sin:
      case FusedOpcode::Recip:
      case FusedOpcode::Sqrt: {
        const std::optional<double> a = at(in.a);
        if (!a) return std::nullopt;
        switch (in.op) {
          case FusedOpcode::Exp2: return std::exp2(*a);
          case FusedOpcode::Log2: return std::log2(*a);
          case FusedOpcode::Sin: return std::sin(*a);
          case FusedOpcode::Recip: return 1.0 / *a;
          default: return std::sqrt(*a);
        }
      }
      case FusedOpcode::Add:
      case FusedOpcode::Mul:
      case FusedOpcode::LessThan: {
        const std::optional<double> a = at(in.a), b = at(in.b);
        if (!a || !b) return std::nullopt;
        if (in.op == FusedOpcode::LessThan) return *a < *b ? 1.0 : 0.0;
        if (boolean)  // or / and
          return in.op == FusedOpcode::Add ? (*a != 0 || *b != 0 ? 1.0 : 0.0)
                                           : (*a != 0 && *b != 0 ? 1.0 : 0.0);
        return in.op == FusedOpcode::Add ? *a + *b : *a * *b;
      }
      case FusedOpcode::Select: {
        const std::optional<double> c = at(in.a);
        if (!c) return std::nullopt;
        return *c != 0 ? at(in.b) : at(in.c);
      }
      default: return std::nullopt;  // Mod, row reductions
    }
  }

  const FusedProgram& p_;
  std::optional<double> x_;
  std::vector<std::optional<double>> memo_;
  std::vector<bool> done_;
};

/// The instruction `i` stands for once casts between float types are set aside.
int through_casts(const FusedProgram& p, int i) {
  while (i >= 0 && p.insts[static_cast<size_t>(i)].op == FusedOpcode::Cast) {
    const FusedInst& c = p.insts[static_cast<size_t>(i)];
    if (!cast_set_aside(p.insts[static_cast<size_t>(c.a)].dtype, c.dtype, p.insts.back().dtype))
      break;
    i = c.a;
  }
  return i;
}

bool is_relu(const FusedProgram& p) {
  Eval constants(p, std::nullopt);
  const auto& in = p.insts;
  auto is_input = [&](int i) {
    const int j = through_casts(p, i);
    return j >= 0 && in[static_cast<size_t>(j)].op == FusedOpcode::Load &&
           in[static_cast<size_t>(j)].a == 0;
  };
  auto is_zero = [&](int i) {
    const std::optional<double> v = constants.at(i);
    return v && *v == 0;
  };
  const int r = through_casts(p, static_cast<int>(in.size()) - 1);
  const FusedInst& sel = in[static_cast<size_t>(r)];
  if (sel.op != FusedOpcode::Select || !is_zero(sel.b) || !is_input(sel.c)) return false;
  // The condition: x < 0, or'ed with constant false terms.
  int c = sel.a;
  while (in[static_cast<size_t>(c)].op == FusedOpcode::Add &&
         in[static_cast<size_t>(c)].dtype == DType::Bool) {
    const FusedInst& o = in[static_cast<size_t>(c)];
    if (is_zero(o.a)) {
      c = o.b;
    } else if (is_zero(o.b)) {
      c = o.a;
    } else {
      return false;
    }
  }
  const FusedInst& lt = in[static_cast<size_t>(c)];
  return lt.op == FusedOpcode::LessThan && is_input(lt.a) && is_zero(lt.b);
}

bool is_gelu_tanh(const FusedProgram& p) {
  for (const FusedInst& in : p.insts)
    switch (in.op) {
      case FusedOpcode::Load:
      case FusedOpcode::Const:
      case FusedOpcode::Add:
      case FusedOpcode::Mul:
      case FusedOpcode::Exp2:
      case FusedOpcode::Recip:
      case FusedOpcode::Cast: break;  // (eval_fused refuses casts to other than floats)
      default: return false;
    }
  const double k = std::sqrt(2.0 / std::numbers::pi);
  for (int i = 0; i < 64; ++i) {
    const double x = -6.0 + 12.0 * (i + 0.5 * std::numbers::sqrt2 - 0.5) / 64.0;
    const std::optional<double> got = eval_fused(p, x);
    const double want = 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
    if (!got || !(std::abs(*got - want) <= 1e-5 * (1.0 + std::abs(want)))) return false;
  }
  return true;
}

}  // namespace

std::optional<FusedProgram> lt_without_sum(const FusedProgram& p) {
  if (p.num_children() != 2 || p.has_row_reduce()) return std::nullopt;
  const auto& in = p.insts;
  // Leaves: the loads, and casts between float types of a load; the load each one reads.
  std::vector<int> leaf(in.size(), -1);
  for (size_t i = 0; i < in.size(); ++i) {
    const FusedInst& x = in[i];
    if (x.op == FusedOpcode::Load) leaf[i] = x.a;
    if (x.op == FusedOpcode::Cast && in[static_cast<size_t>(x.a)].op == FusedOpcode::Load &&
        cast_set_aside(in[static_cast<size_t>(x.a)].dtype, x.dtype, in.back().dtype))
      leaf[i] = in[static_cast<size_t>(x.a)].a;
  }
  auto leaf_of = [&](int i) { return i >= 0 ? leaf[static_cast<size_t>(i)] : -1; };
  int sum = -1;
  for (size_t i = 0; i < in.size(); ++i) {
    const FusedInst& x = in[i];
    if (leaf[i] >= 0) continue;
    const int reads = (leaf_of(x.a) >= 0) + (leaf_of(x.b) >= 0) + (leaf_of(x.c) >= 0);
    if (reads == 0) continue;
    if (x.op != FusedOpcode::Add || reads != 2 || sum >= 0 || !is_float(x.dtype) ||
        leaf_of(x.a) == leaf_of(x.b))
      return std::nullopt;  // a load read elsewhere, or not the sum of the two
    sum = static_cast<int>(i);
  }
  if (sum < 0) return std::nullopt;
  FusedProgram out = p;
  for (size_t i = 0; i < in.size(); ++i)
    if (leaf[i] >= 0) out.insts[i] = FusedInst{FusedOpcode::Const, in[i].dtype};  // (now unread)
  out.insts[static_cast<size_t>(sum)] =
      FusedInst{FusedOpcode::Load, in[static_cast<size_t>(sum)].dtype, 0};
  return out;
}

std::optional<double> eval_fused(const FusedProgram& p, double x) {
  if (p.insts.empty() || p.num_children() != 1) return std::nullopt;
  Eval e(p, x);
  return e.at(static_cast<int>(p.insts.size()) - 1);
}

LtActivation lt_activation_of(const FusedProgram& p) {
  if (p.insts.empty() || p.num_children() != 1 || p.has_row_reduce()) return LtActivation::None;
  if (is_relu(p)) return LtActivation::Relu;
  if (is_gelu_tanh(p)) return LtActivation::GeluTanh;
  return LtActivation::None;
}

}  // namespace luminal::cuda

#include "luminal/core/slot_expr.hpp"

#include <algorithm>

#include "luminal/core/error.hpp"

namespace luminal {

namespace {

using K = Expr::Kind;

constexpr int kMaxStack = 64;

[[noreturn]] void fail(const Expr& e, const std::string& what) {
  throw Error("evaluating '" + e.to_string() + "': " + what);
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

}  // namespace

SlotExpr::SlotExpr(const Expr& e, const std::vector<std::string>& slots) : expr_(e) {
  emit(e, slots, 1);
  if (max_depth_ > kMaxStack)
    throw Error("SlotExpr: '" + e.to_string() + "' is too deeply nested to compile");
}

void SlotExpr::emit(const Expr& e, const std::vector<std::string>& slots, int depth) {
  max_depth_ = std::max(max_depth_, depth);
  switch (e.kind()) {
    case K::Const: code_.push_back({K::Const, e.as_const()}); return;
    case K::Var: {
      auto it = std::find(slots.begin(), slots.end(), e.var_name());
      if (it == slots.end()) {
        throw Error("expression '" + expr_.to_string() + "' uses '" + e.var_name() +
                    "', which is not a dynamic dimension of this program");
      }
      code_.push_back({K::Var, it - slots.begin()});
      return;
    }
    default: break;
  }
  std::vector<Expr> ch = e.children();
  for (size_t i = 0; i < ch.size(); ++i)
    emit(ch[i], slots, depth + static_cast<int>(i));
  code_.push_back({e.kind(), static_cast<int64_t>(ch.size())});
}

int64_t SlotExpr::eval(const int64_t* dims) const {
  int64_t stack[kMaxStack];
  int sp = 0;
  for (const Step& s : code_) {
    switch (s.op) {
      case K::Const: stack[sp++] = s.arg; continue;
      case K::Var: stack[sp++] = dims[s.arg]; continue;
      case K::Add:
      case K::Mul: {
        const int n = static_cast<int>(s.arg);
        __extension__ __int128 acc = stack[sp - n];
        for (int i = sp - n + 1; i < sp; ++i) {
          acc = s.op == K::Add ? acc + stack[i] : acc * stack[i];
          if (acc > INT64_MAX || acc < INT64_MIN) fail(expr_, "64-bit overflow");
        }
        sp -= n;
        stack[sp++] = static_cast<int64_t>(acc);
        continue;
      }
      default: break;
    }
    const int64_t b = stack[--sp];
    const int64_t a = stack[sp - 1];
    int64_t r = 0;
    switch (s.op) {
      case K::Div:
      case K::Mod:
        if (b == 0) fail(expr_, "division by zero");
        if (a == INT64_MIN && b == -1) fail(expr_, "64-bit overflow");
        r = s.op == K::Div ? floor_div(a, b) : floor_mod(a, b);
        break;
      case K::Min: r = std::min(a, b); break;
      case K::Max: r = std::max(a, b); break;
      case K::Lt: r = a < b; break;
      case K::Le: r = a <= b; break;
      case K::Eq: r = a == b; break;
      case K::Ne: r = a != b; break;
      case K::And: r = (a != 0) && (b != 0); break;
      case K::Or: r = (a != 0) || (b != 0); break;
      default: break;
    }
    stack[sp - 1] = r;
  }
  return stack[0];
}

}  // namespace luminal

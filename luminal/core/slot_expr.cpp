#include "luminal/core/slot_expr.hpp"

#include <algorithm>

#include "luminal/core/error.hpp"

namespace luminal {

namespace {

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
  using K = Expr::Kind;
  switch (e.kind()) {
    case K::Const: code_.push_back({Op::Const, e.as_const()}); return;
    case K::Var: {
      auto it = std::find(slots.begin(), slots.end(), e.var_name());
      if (it == slots.end()) {
        throw Error("expression '" + expr_.to_string() + "' uses '" + e.var_name() +
                    "', which is not a dynamic dimension of this program");
      }
      code_.push_back({Op::Slot, it - slots.begin()});
      return;
    }
    default: break;
  }
  std::vector<Expr> ch = e.children();
  for (size_t i = 0; i < ch.size(); ++i)
    emit(ch[i], slots, depth + static_cast<int>(i));
  Op op = Op::Add;
  switch (e.kind()) {
    case K::Add: op = Op::Add; break;
    case K::Mul: op = Op::Mul; break;
    case K::Div: op = Op::Div; break;
    case K::Mod: op = Op::Mod; break;
    case K::Min: op = Op::Min; break;
    case K::Max: op = Op::Max; break;
    case K::Lt: op = Op::Lt; break;
    case K::Le: op = Op::Le; break;
    case K::Eq: op = Op::Eq; break;
    case K::Ne: op = Op::Ne; break;
    case K::And: op = Op::And; break;
    case K::Or: op = Op::Or; break;
    default: break;
  }
  code_.push_back({op, static_cast<int64_t>(ch.size())});
}

int64_t SlotExpr::eval(const int64_t* dims) const {
  int64_t stack[kMaxStack];
  int sp = 0;
  for (const Step& s : code_) {
    switch (s.op) {
      case Op::Const: stack[sp++] = s.arg; continue;
      case Op::Slot: stack[sp++] = dims[s.arg]; continue;
      case Op::Add:
      case Op::Mul: {
        const int n = static_cast<int>(s.arg);
        __extension__ __int128 acc = stack[sp - n];
        for (int i = sp - n + 1; i < sp; ++i) {
          acc = s.op == Op::Add ? acc + stack[i] : acc * stack[i];
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
      case Op::Div:
      case Op::Mod:
        if (b == 0) fail(expr_, "division by zero");
        if (a == INT64_MIN && b == -1) fail(expr_, "64-bit overflow");
        r = s.op == Op::Div ? floor_div(a, b) : floor_mod(a, b);
        break;
      case Op::Min: r = std::min(a, b); break;
      case Op::Max: r = std::max(a, b); break;
      case Op::Lt: r = a < b; break;
      case Op::Le: r = a <= b; break;
      case Op::Eq: r = a == b; break;
      case Op::Ne: r = a != b; break;
      case Op::And: r = (a != 0) && (b != 0); break;
      case Op::Or: r = (a != 0) || (b != 0); break;
      default: break;
    }
    stack[sp - 1] = r;
  }
  return stack[0];
}

}  // namespace luminal

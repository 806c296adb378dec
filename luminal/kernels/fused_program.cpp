// The fused elementwise program (see fused_program.hpp).
#include "luminal/kernels/fused_program.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>

#include "luminal/core/error.hpp"
#include "luminal/core/hash.hpp"

namespace luminal {

// ================================================================ the program

namespace {
size_t mix(size_t h, size_t v) { return hash_combined(h, v); }
}  // namespace

bool is_unary_math(FusedOpcode op) {
  return op == FusedOpcode::Exp2 || op == FusedOpcode::Log2 || op == FusedOpcode::Sin ||
         op == FusedOpcode::Recip || op == FusedOpcode::Sqrt;
}
bool is_binary(FusedOpcode op) {
  return op == FusedOpcode::Add || op == FusedOpcode::Mul || op == FusedOpcode::Mod ||
         op == FusedOpcode::LessThan;
}
bool is_row_reduce(FusedOpcode op) {
  return op == FusedOpcode::RowSum || op == FusedOpcode::RowMax;
}
int arity(FusedOpcode op) {
  if (op == FusedOpcode::Load || op == FusedOpcode::Const) return 0;
  if (op == FusedOpcode::Select) return 3;
  return is_binary(op) ? 2 : 1;
}

std::string_view opcode_name(FusedOpcode op) {
  switch (op) {
    case FusedOpcode::Load: return "load";
    case FusedOpcode::Const: return "const";
    case FusedOpcode::Exp2: return "exp2";
    case FusedOpcode::Log2: return "log2";
    case FusedOpcode::Sin: return "sin";
    case FusedOpcode::Recip: return "recip";
    case FusedOpcode::Sqrt: return "sqrt";
    case FusedOpcode::Cast: return "cast";
    case FusedOpcode::Add: return "add";
    case FusedOpcode::Mul: return "mul";
    case FusedOpcode::Mod: return "mod";
    case FusedOpcode::LessThan: return "lt";
    case FusedOpcode::Select: return "select";
    case FusedOpcode::RowSum: return "rowsum";
    case FusedOpcode::RowMax: return "rowmax";
  }
  return "?";
}

bool FusedInst::operator==(const FusedInst& o) const {
  return op == o.op && dtype == o.dtype && a == o.a && b == o.b && c == o.c &&
         std::bit_cast<uint64_t>(value) == std::bit_cast<uint64_t>(o.value) &&
         int_value == o.int_value;
}

size_t FusedProgram::hash() const {
  size_t h = 0x5f3759df;
  for (const FusedInst& i : insts) {
    h = mix(h, static_cast<size_t>(i.op) | (static_cast<size_t>(i.dtype) << 8));
    h = mix(h, static_cast<size_t>(static_cast<uint32_t>(i.a)));
    h = mix(h, static_cast<size_t>(static_cast<uint32_t>(i.b)));
    h = mix(h, static_cast<size_t>(static_cast<uint32_t>(i.c)));
    h = mix(h, std::bit_cast<uint64_t>(i.value));
    h = mix(h, static_cast<size_t>(i.int_value));
  }
  return h;
}

bool FusedProgram::equals(const Payload& o) const {
  return insts == static_cast<const FusedProgram&>(o).insts;
}

std::string FusedProgram::to_string() const {
  std::ostringstream os;
  for (size_t k = 0; k < insts.size(); ++k) {
    const FusedInst& i = insts[k];
    if (k) os << ' ';
    os << '%' << k << '=' << opcode_name(i.op);
    if (i.op == FusedOpcode::Load) {
      os << i.a;
    } else if (i.op == FusedOpcode::Const) {
      if (is_float(i.dtype) || i.dtype == DType::Bool)
        os << '(' << i.value << ')';
      else
        os << '(' << i.int_value << ')';
    } else {
      os << "(%" << i.a;
      if (i.b >= 0) os << ",%" << i.b;
      if (i.c >= 0) os << ",%" << i.c;
      os << ')';
    }
    os << ':' << name(i.dtype);
  }
  return os.str();
}

std::string FusedProgram::serialize() const {
  std::string s;
  char buf[128];
  for (const FusedInst& i : insts) {
    std::snprintf(buf, sizeof buf, "%d %d %d %d %d %llx %lld;", static_cast<int>(i.op),
                  static_cast<int>(i.dtype), i.a, i.b, i.c,
                  static_cast<unsigned long long>(std::bit_cast<uint64_t>(i.value)),
                  static_cast<long long>(i.int_value));
    s += buf;
  }
  return s;
}

std::shared_ptr<const FusedProgram> FusedProgram::deserialize(std::string_view text) {
  std::vector<FusedInst> insts;
  std::string t(text);
  size_t pos = 0;
  while (pos < t.size()) {
    const size_t end = t.find(';', pos);
    if (end == std::string::npos) throw Error("fused_program: missing ';' in '" + t + "'");
    int op = 0, dt = 0, a = 0, b = 0, c = 0;
    unsigned long long bits = 0;
    long long iv = 0;
    if (std::sscanf(t.c_str() + pos, "%d %d %d %d %d %llx %lld", &op, &dt, &a, &b, &c, &bits,
                    &iv) != 7 ||
        op < 0 || op > static_cast<int>(FusedOpcode::RowMax) || dt < 0 ||
        dt >= static_cast<int>(std::size(kAllDTypes))) {
      throw Error("fused_program: malformed instruction '" + t.substr(pos, end - pos) + "'");
    }
    FusedInst i;
    i.op = static_cast<FusedOpcode>(op);
    i.dtype = static_cast<DType>(dt);
    i.a = a;
    i.b = b;
    i.c = c;
    i.value = std::bit_cast<double>(static_cast<uint64_t>(bits));
    i.int_value = iv;
    insts.push_back(i);
    pos = end + 1;
  }
  auto p = std::make_shared<FusedProgram>(std::move(insts));
  p->validate();
  return p;
}

int FusedProgram::num_children() const {
  int n = 0;
  for (const FusedInst& i : insts)
    if (i.op == FusedOpcode::Load) n = std::max(n, i.a + 1);
  return n;
}

void FusedProgram::validate() const {
  auto fail = [&](size_t k, const std::string& why) {
    throw Error("fused program: instruction %" + std::to_string(k) + " (" +
                std::string(opcode_name(insts[k].op)) + ") " + why + " in " + to_string());
  };
  if (insts.empty()) throw Error("fused program: no instructions");
  for (size_t k = 0; k < insts.size(); ++k) {
    const FusedInst& i = insts[k];
    const int n = arity(i.op);
    const int32_t ops[3] = {i.a, i.b, i.c};
    if (i.op == FusedOpcode::Load && i.a < 0) fail(k, "loads a negative child");
    for (int j = 0; j < n; ++j)
      if (ops[j] < 0 || ops[j] >= static_cast<int32_t>(k)) fail(k, "reads a later instruction");
    auto dt = [&](int j) { return insts[ops[j]].dtype; };
    if ((is_unary_math(i.op) || is_row_reduce(i.op)) && (!is_float(i.dtype) || dt(0) != i.dtype))
      fail(k, "needs one float dtype");
    if (is_binary(i.op)) {
      if (dt(0) != dt(1)) fail(k, "has operands of different dtypes");
      if (i.op == FusedOpcode::LessThan ? i.dtype != DType::Bool : i.dtype != dt(0))
        fail(k, "has the wrong result dtype");
    }
    if (i.op == FusedOpcode::Select &&
        (dt(0) != DType::Bool || dt(1) != i.dtype || dt(2) != i.dtype))
      fail(k, "needs a bool condition and branches of its dtype");
  }
}

bool FusedProgram::has_row_reduce() const {
  return std::any_of(insts.begin(), insts.end(),
                     [](const FusedInst& i) { return is_row_reduce(i.op); });
}

}  // namespace luminal

#include "luminal/core/expr_serial.hpp"

#include <cctype>
#include <charconv>
#include <vector>

#include "luminal/core/error.hpp"

namespace luminal {

namespace {

const char* op_text(Expr::Kind k) {
  using K = Expr::Kind;
  switch (k) {
    case K::Add: return "+";
    case K::Mul: return "*";
    case K::Div: return "/";
    case K::Mod: return "%";
    case K::Min: return "min";
    case K::Max: return "max";
    case K::Lt: return "<";
    case K::Le: return "<=";
    case K::Eq: return "==";
    case K::Ne: return "!=";
    case K::And: return "and";
    case K::Or: return "or";
    default: return "?";
  }
}

void write(const Expr& e, std::string& out) {
  if (e.is_const()) {
    out += std::to_string(e.as_const());
    return;
  }
  if (e.is_var()) {
    out += e.var_name();
    return;
  }
  out += "(";
  out += op_text(e.kind());
  for (const Expr& c : e.children()) {
    out += " ";
    write(c, out);
  }
  out += ")";
}

[[noreturn]] void bad(std::string_view text, const std::string& why) {
  throw Error("read_expr: " + why + " at '" + std::string(text.substr(0, 40)) + "'");
}

void skip_spaces(std::string_view& t) {
  while (!t.empty() && t.front() == ' ')
    t.remove_prefix(1);
}

std::string_view token(std::string_view& t) {
  size_t n = 0;
  while (n < t.size() && t[n] != ' ' && t[n] != '(' && t[n] != ')')
    ++n;
  std::string_view tok = t.substr(0, n);
  t.remove_prefix(n);
  return tok;
}

Expr combine(std::string_view op, const std::vector<Expr>& a, std::string_view at) {
  auto need2 = [&] {
    if (a.size() != 2) bad(at, "'" + std::string(op) + "' takes two operands");
  };
  if (op == "+" || op == "*") {
    if (a.size() < 2) bad(at, "'" + std::string(op) + "' takes at least two operands");
    Expr r = a[0];
    for (size_t i = 1; i < a.size(); ++i)
      r = op == "+" ? r + a[i] : r * a[i];
    return r;
  }
  need2();
  if (op == "/") return a[0] / a[1];
  if (op == "%") return a[0] % a[1];
  if (op == "min") return min(a[0], a[1]);
  if (op == "max") return max(a[0], a[1]);
  if (op == "<") return lt(a[0], a[1]);
  if (op == "<=") return le(a[0], a[1]);
  if (op == "==") return eq(a[0], a[1]);
  if (op == "!=") return ne(a[0], a[1]);
  if (op == "and") return logical_and(a[0], a[1]);
  if (op == "or") return logical_or(a[0], a[1]);
  bad(at, "unknown operator '" + std::string(op) + "'");
}

}  // namespace

std::string write_expr(const Expr& e) {
  std::string s;
  write(e, s);
  return s;
}

Expr read_expr_prefix(std::string_view& t) {
  skip_spaces(t);
  if (t.empty()) bad(t, "expected an expression");
  if (t.front() == '(') {
    const std::string_view at = t;
    t.remove_prefix(1);
    std::string_view op = token(t);
    std::vector<Expr> args;
    skip_spaces(t);
    while (!t.empty() && t.front() != ')') {
      args.push_back(read_expr_prefix(t));
      skip_spaces(t);
    }
    if (t.empty()) bad(at, "missing ')'");
    t.remove_prefix(1);
    skip_spaces(t);
    return combine(op, args, at);
  }
  std::string_view tok = token(t);
  skip_spaces(t);
  if (tok.empty()) bad(t, "expected an expression");
  if (std::isdigit(static_cast<unsigned char>(tok.front())) || tok.front() == '-') {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
    if (ec != std::errc() || p != tok.data() + tok.size()) bad(tok, "bad integer");
    return Expr(v);
  }
  return tok == "z" ? Expr::z() : Expr::var(tok);
}

Expr read_expr(std::string_view text) {
  std::string_view t = text;
  Expr e = read_expr_prefix(t);
  if (!t.empty()) bad(t, "trailing text");
  return e;
}

std::string write_view(const View& v) {
  std::string s = std::to_string(v.rank());
  for (const Expr& d : v.dims)
    s += " " + write_expr(d);
  for (const Expr& st : v.strides)
    s += " " + write_expr(st);
  return s + " " + write_expr(v.base);
}

View read_view_prefix(std::string_view& text, std::string_view what) {
  const std::string all(text);
  size_t used = 0;
  int rank = -1;
  try {
    rank = std::stoi(all, &used);
  } catch (const std::exception&) {
  }
  if (rank < 1 || rank > 16)
    throw Error(std::string(what) + ": expected a view's rank from 1 to 16, got '" + all + "'");
  text.remove_prefix(used);
  while (!text.empty() && text.front() == ' ')
    text.remove_prefix(1);
  View v;
  for (int i = 0; i < rank; ++i)
    v.dims.push_back(read_expr_prefix(text));
  for (int i = 0; i < rank; ++i)
    v.strides.push_back(read_expr_prefix(text));
  v.base = read_expr_prefix(text);
  return v;
}

}  // namespace luminal

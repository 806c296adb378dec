// The expressions of the chat-template parser (parser.hpp), following jinja2/parser.py:
// tuples, conditional expressions, and/or/not, comparisons, arithmetic by precedence, unary
// operators, literals, subscripts and slices, calls, filters and tests.
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>

#include "luminal/io/chat/parser.hpp"

namespace luminal::io::chat {

bool Parser::tuple_end(const std::set<std::string>& extra) const {
  const Token& t = cur();
  if (t.type == Tok::VarEnd || t.type == Tok::BlockEnd || t.type == Tok::Eof) return true;
  if (t.type == Tok::Op && t.text == ")") return true;
  return t.type == Tok::Name && extra.count(t.text);
}

ExprPtr Parser::parse_tuple(bool with_cond, const std::set<std::string>& extra,
                            bool explicit_paren) {
  int line = cur().line;
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  while (true) {
    if (!items.empty()) expect_op(",");
    if (tuple_end(extra)) break;
    items.push_back(expression(with_cond));
    if (is_op(",")) {
      is_tuple = true;
    } else {
      break;
    }
  }
  if (!is_tuple) {
    if (!items.empty()) return std::move(items[0]);
    if (!explicit_paren) error("Expected an expression, got '" + describe(cur()) + "'");
  }
  auto e = make(Expr::Kind::Tuple, line);
  e->items = std::move(items);
  return e;
}

ExprPtr Parser::expression(bool with_cond) { return with_cond ? cond_expr() : or_expr(); }

ExprPtr Parser::cond_expr() {
  int line = cur().line;
  ExprPtr e = or_expr();
  while (skip_name("if")) {
    auto c = make(Expr::Kind::Cond, line);
    ExprPtr test = or_expr();
    ExprPtr other = skip_name("else") ? cond_expr() : nullptr;
    c->items.push_back(std::move(e));
    c->items.push_back(std::move(test));
    c->items.push_back(std::move(other));
    e = std::move(c);
  }
  return e;
}

ExprPtr Parser::binary_chain(Expr::Kind kind, ExprPtr (Parser::*next)(), std::string_view word) {
  int line = cur().line;
  ExprPtr e = (this->*next)();
  while (skip_name(word)) {
    auto b = make(kind, line);
    b->items.push_back(std::move(e));
    b->items.push_back((this->*next)());
    e = std::move(b);
  }
  return e;
}

ExprPtr Parser::or_expr() { return binary_chain(Expr::Kind::Or, &Parser::and_expr, "or"); }

ExprPtr Parser::and_expr() { return binary_chain(Expr::Kind::And, &Parser::not_expr, "and"); }

ExprPtr Parser::not_expr() {
  if (is_name("not")) {
    auto e = make(Expr::Kind::Not, cur().line);
    ++p;
    e->items.push_back(not_expr());
    return e;
  }
  return compare();
}

ExprPtr Parser::compare() {
  int line = cur().line;
  ExprPtr e = math1();
  auto c = make(Expr::Kind::Compare, line);
  while (true) {
    static const std::set<std::string> ops{"==", "!=", "<", "<=", ">", ">="};
    if (cur().type == Tok::Op && ops.count(cur().text)) {
      c->ops.push_back(toks[p++].text);
    } else if (skip_name("in")) {
      c->ops.push_back("in");
    } else if (is_name("not") && peek().type == Tok::Name && peek().text == "in") {
      p += 2;
      c->ops.push_back("notin");
    } else {
      break;
    }
    c->items.push_back(math1());
  }
  if (c->ops.empty()) return e;
  c->items.insert(c->items.begin(), std::move(e));
  return c;
}

ExprPtr Parser::binop(ExprPtr (Parser::*next)(), std::initializer_list<std::string_view> ops) {
  int line = cur().line;
  ExprPtr e = (this->*next)();
  while (cur().type == Tok::Op) {
    bool hit = false;
    for (auto op : ops)
      hit = hit || cur().text == op;
    if (!hit) break;
    auto b = make(Expr::Kind::Binary, line);
    b->name = toks[p++].text;
    b->items.push_back(std::move(e));
    b->items.push_back((this->*next)());
    e = std::move(b);
  }
  return e;
}

ExprPtr Parser::math1() { return binop(&Parser::concat, {"+", "-"}); }

ExprPtr Parser::concat() { return binop(&Parser::math2, {"~"}); }

ExprPtr Parser::math2() { return binop(&Parser::pow, {"*", "/", "//", "%"}); }

ExprPtr Parser::pow() { return binop(&Parser::unary_filtered, {"**"}); }

ExprPtr Parser::unary_filtered() { return unary(true); }

ExprPtr Parser::unary(bool with_filter) {
  int line = cur().line;
  ExprPtr e;
  if (is_op("-") || is_op("+")) {
    e = make(is_op("-") ? Expr::Kind::Neg : Expr::Kind::Pos, line);
    ++p;
    e->items.push_back(unary(false));
  } else {
    e = primary();
  }
  e = postfix(std::move(e));
  if (with_filter) e = filter_expr(std::move(e));
  return e;
}

ExprPtr Parser::primary() {
  const Token& t = cur();
  int line = t.line;
  if (t.type == Tok::Name) {
    ++p;
    auto e = make(Expr::Kind::Const, line);
    if (t.text == "true" || t.text == "True") {
      e->value = Value::boolean(true);
    } else if (t.text == "false" || t.text == "False") {
      e->value = Value::boolean(false);
    } else if (t.text == "none" || t.text == "None") {
      e->value = Value::none();
    } else {
      e->kind = Expr::Kind::Name;
      e->name = t.text;
    }
    return e;
  }
  if (t.type == Tok::String) {
    std::string s;
    while (cur().type == Tok::String)
      s += toks[p++].text;
    auto e = make(Expr::Kind::Const, line);
    e->value = Value::string(std::move(s));
    return e;
  }
  if (t.type == Tok::Integer || t.type == Tok::Float) {
    ++p;
    auto e = make(Expr::Kind::Const, line);
    try {
      e->value = t.type == Tok::Integer ? Value::integer(std::stoll(t.text))
                                        : Value::floating(std::stod(t.text));
    } catch (const std::out_of_range&) {
      error("number " + t.text + " is out of range (integers are 64-bit)", line);
    }
    return e;
  }
  if (skip_op("(")) {
    ExprPtr e = parse_tuple(true, {}, true);
    expect_op(")");
    return e;
  }
  // A list, or a dict (its items alternate keys and values); a trailing comma is allowed.
  if (const bool dict = is_op("{"); dict || is_op("[")) {
    ++p;
    const std::string_view close = dict ? "}" : "]";
    auto e = make(dict ? Expr::Kind::Dict : Expr::Kind::List, line);
    while (!is_op(close)) {
      if (!e->items.empty()) expect_op(",");
      if (is_op(close)) break;
      e->items.push_back(expression(true));
      if (dict) {
        expect_op(":");
        e->items.push_back(expression(true));
      }
    }
    expect_op(close);
    return e;
  }
  error("unexpected '" + describe(t) + "'");
}

ExprPtr Parser::postfix(ExprPtr e) {
  while (true) {
    if (is_op(".") || is_op("[")) {
      e = subscript(std::move(e));
    } else if (is_op("(")) {
      e = call(std::move(e));
    } else {
      return e;
    }
  }
}

ExprPtr Parser::filter_expr(ExprPtr e) {
  while (true) {
    if (is_op("|")) {
      e = filter(std::move(e), true);
    } else if (is_name("is")) {
      e = test(std::move(e));
    } else if (is_op("(")) {
      e = call(std::move(e));
    } else {
      return e;
    }
  }
}

ExprPtr Parser::subscript(ExprPtr obj) {
  const Token& t = toks[p++];
  int line = t.line;
  if (t.text == ".") {
    const Token& a = toks[p++];
    if (a.type == Tok::Name) {
      auto e = make(Expr::Kind::Getattr, line);
      e->name = a.text;
      e->items.push_back(std::move(obj));
      return e;
    }
    if (a.type == Tok::Integer) {
      auto e = make(Expr::Kind::Getitem, line);
      auto k = make(Expr::Kind::Const, line);
      k->value = Value::integer(std::stoll(a.text));
      e->items.push_back(std::move(obj));
      e->items.push_back(std::move(k));
      return e;
    }
    error("expected name or number", a.line);
  }
  // '[' : an index or a slice
  ExprPtr parts[3];
  bool is_slice = false;
  if (!is_op(":")) parts[0] = expression(true);
  if (skip_op(":")) {
    is_slice = true;
    if (!is_op("]") && !is_op(":")) parts[1] = expression(true);
    if (skip_op(":")) {
      if (!is_op("]")) parts[2] = expression(true);
    }
  }
  expect_op("]");
  auto e = make(is_slice ? Expr::Kind::Slice : Expr::Kind::Getitem, line);
  e->items.push_back(std::move(obj));
  e->items.push_back(std::move(parts[0]));
  if (is_slice) {
    e->items.push_back(std::move(parts[1]));
    e->items.push_back(std::move(parts[2]));
  }
  return e;
}

void Parser::call_args(std::vector<CallArg>& args) {
  const int line = cur().line;
  expect_op("(");
  bool dyn_args = false, dyn_kwargs = false, keywords = false;
  auto ensure = [&](bool ok) {
    if (!ok) error("invalid syntax for function call expression", line);
  };
  while (!is_op(")")) {
    if (!args.empty()) expect_op(",");
    if (is_op(")")) break;
    CallArg a;
    if (skip_op("*")) {
      ensure(!dyn_args && !dyn_kwargs);
      a.name = "*";
      dyn_args = true;
    } else if (skip_op("**")) {
      ensure(!dyn_kwargs);
      a.name = "**";
      dyn_kwargs = true;
    } else if (cur().type == Tok::Name && peek().type == Tok::Op && peek().text == "=") {
      ensure(!dyn_kwargs);
      a.name = expect_name();
      keywords = true;
      ++p;
    } else {
      ensure(!dyn_args && !dyn_kwargs && !keywords);
    }
    a.value = expression(true);
    args.push_back(std::move(a));
  }
  expect_op(")");
}

ExprPtr Parser::call(ExprPtr callee) {
  auto e = make(Expr::Kind::Call, cur().line);
  e->items.push_back(std::move(callee));
  call_args(e->args);
  return e;
}

ExprPtr Parser::filter(ExprPtr e, bool start_inline) {
  (void)start_inline;
  ++p;  // '|'
  return named_filter(std::move(e));
}

ExprPtr Parser::named_filter(ExprPtr e) {
  int line = cur().line;
  std::string name = expect_name();
  while (skip_op("."))
    name += "." + expect_name();
  auto f = make(Expr::Kind::Filter, line);
  f->name = name;
  f->items.push_back(std::move(e));
  if (is_op("(")) call_args(f->args);
  return f;
}

ExprPtr Parser::test(ExprPtr e) {
  int line = cur().line;
  ++p;  // 'is'
  bool negated = skip_name("not");
  std::string name = expect_name();
  while (skip_op("."))
    name += "." + expect_name();
  auto t = make(Expr::Kind::Test, line);
  t->name = name;
  t->negated = negated;
  t->items.push_back(std::move(e));
  if (is_op("(")) {
    call_args(t->args);
  } else if ((cur().type == Tok::Name || cur().type == Tok::String || cur().type == Tok::Integer ||
              cur().type == Tok::Float || is_op("(") || is_op("[") || is_op("{")) &&
             !is_name("else") && !is_name("or") && !is_name("and")) {
    if (is_name("is")) error("You cannot chain multiple tests with is");
    CallArg a;
    a.value = postfix(primary());
    t->args.push_back(std::move(a));
  }
  return t;
}

}  // namespace luminal::io::chat

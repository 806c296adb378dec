// Recursive-descent parser following jinja2/parser.py (same precedence and statement grammar).
#include <set>
#include <string>

#include "luminal/io/chat/ast.hpp"

namespace luminal::io::chat {
namespace {

std::string describe(const Token& t) {
  switch (t.type) {
    case Tok::Data: return "template data";
    case Tok::VarBegin: return "begin of print statement";
    case Tok::VarEnd: return "end of print statement";
    case Tok::BlockBegin: return "begin of statement block";
    case Tok::BlockEnd: return "end of statement block";
    case Tok::Eof: return "end of template";
    case Tok::String: return "string";
    case Tok::Integer: return "integer";
    case Tok::Float: return "float";
    default: return t.text;
  }
}

ExprPtr make(Expr::Kind k, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = k;
  e->line = line;
  return e;
}

struct Parser {
  std::vector<Token> toks;
  size_t p = 0;
  std::vector<std::string> end_stack;  // block names we are inside, for error messages

  const Token& cur() const { return toks[p]; }
  const Token& peek(size_t n = 1) const { return toks[std::min(p + n, toks.size() - 1)]; }
  [[noreturn]] void error(const std::string& msg, int line) { throw SyntaxError{msg, line}; }
  [[noreturn]] void error(const std::string& msg) { error(msg, cur().line); }

  bool is_op(std::string_view op) const { return cur().type == Tok::Op && cur().text == op; }
  bool is_name(std::string_view n) const { return cur().type == Tok::Name && cur().text == n; }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    ++p;
    return true;
  }
  bool skip_name(std::string_view n) {
    if (!is_name(n)) return false;
    ++p;
    return true;
  }
  void expect_op(std::string_view op) {
    if (!skip_op(op))
      error("expected token '" + std::string(op) + "', got '" + describe(cur()) + "'");
  }
  std::string expect_name() {
    if (cur().type != Tok::Name) error("expected token 'name', got '" + describe(cur()) + "'");
    return toks[p++].text;
  }
  void expect_block_end() {
    if (cur().type != Tok::BlockEnd)
      error("expected token 'end of statement block', got '" + describe(cur()) + "'");
    ++p;
  }

  // ---- templates ----
  Body subparse(const std::set<std::string>& end_names) {
    Body body;
    while (true) {
      const Token& t = cur();
      if (t.type == Tok::Data) {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::Output;
        s->line = t.line;
        s->text = t.text;
        body.push_back(std::move(s));
        ++p;
      } else if (t.type == Tok::VarBegin) {
        ++p;
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::Print;
        s->line = cur().line;
        s->expr = parse_tuple(true, {});
        if (cur().type != Tok::VarEnd)
          error("expected token 'end of print statement', got '" + describe(cur()) + "'");
        ++p;
        body.push_back(std::move(s));
      } else if (t.type == Tok::BlockBegin) {
        ++p;
        if (cur().type == Tok::Name && end_names.count(cur().text)) return body;
        body.push_back(statement());
      } else if (t.type == Tok::Eof) {
        if (!end_names.empty()) {
          std::string want;
          for (const auto& n : end_names)
            want += (want.empty() ? "'" : " or '") + n + "'";
          error("Unexpected end of template. Jinja was looking for the following tags: " + want +
                ". The innermost block that needs to be closed is '" + end_stack.back() + "'.");
        }
        return body;
      } else {
        error("unexpected '" + describe(t) + "'");
      }
    }
  }

  std::unique_ptr<Stmt> statement() {
    if (cur().type != Tok::Name) error("tag name expected");
    const Token& t = cur();
    int line = t.line;
    std::string tag = t.text;
    ++p;
    auto s = std::make_unique<Stmt>();
    s->line = line;
    if (tag == "if") {
      s->kind = Stmt::Kind::If;
      end_stack.push_back("if");
      s->conds.push_back(parse_tuple(false, {}));
      expect_block_end();
      while (true) {
        s->bodies.push_back(subparse({"elif", "else", "endif"}));
        std::string which = toks[p++].text;
        if (which == "elif") {
          s->conds.push_back(parse_tuple(false, {}));
          expect_block_end();
        } else if (which == "else") {
          expect_block_end();
          s->bodies.push_back(subparse({"endif"}));
          ++p;
          expect_block_end();
          break;
        } else {
          expect_block_end();
          break;
        }
      }
      end_stack.pop_back();
    } else if (tag == "for") {
      s->kind = Stmt::Kind::For;
      end_stack.push_back("for");
      s->targets = assign_names({"in"});
      if (!skip_name("in")) error("expected token 'in', got '" + describe(cur()) + "'");
      s->expr = parse_tuple(false, {"recursive"});
      if (skip_name("if")) s->filter = expression(true);
      if (is_name("recursive")) error("recursive loops are not supported");
      expect_block_end();
      s->body = subparse({"endfor", "else"});
      if (toks[p++].text == "else") {
        expect_block_end();
        s->else_body = subparse({"endfor"});
        ++p;
      }
      expect_block_end();
      end_stack.pop_back();
    } else if (tag == "set") {
      if (cur().type == Tok::Name && peek().type == Tok::Op && peek().text == ".") {
        s->targets.push_back(expect_name());
        ++p;
        s->attr = expect_name();
      } else {
        s->targets = assign_names({});
      }
      if (skip_op("=")) {
        s->kind = Stmt::Kind::Set;
        s->expr = parse_tuple(true, {});
        expect_block_end();
      } else {
        if (!s->attr.empty() || s->targets.size() != 1) error("expected token '='");
        s->kind = Stmt::Kind::SetBlock;
        expect_block_end();
        end_stack.push_back("set");
        s->body = subparse({"endset"});
        ++p;
        expect_block_end();
        end_stack.pop_back();
      }
    } else if (tag == "macro") {
      s->kind = Stmt::Kind::Macro;
      s->name = expect_name();
      expect_op("(");
      while (!skip_op(")")) {
        if (!s->params.empty()) expect_op(",");
        s->params.push_back(expect_name());
        s->defaults.push_back(skip_op("=") ? expression(true) : nullptr);
      }
      expect_block_end();
      end_stack.push_back("macro");
      s->body = subparse({"endmacro"});
      ++p;
      expect_block_end();
      end_stack.pop_back();
    } else if (tag == "break" || tag == "continue") {
      if (std::find(end_stack.begin(), end_stack.end(), "for") == end_stack.end())
        error("'" + tag + "' is only allowed inside a loop", line);
      s->kind = tag == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue;
      expect_block_end();
    } else if (tag == "filter") {
      s->kind = Stmt::Kind::FilterBlock;
      auto body = make(Expr::Kind::Name, line);
      body->name = std::string(kFilterBlockBody);
      s->expr = named_filter(std::move(body));
      while (is_op("|"))
        s->expr = filter(std::move(s->expr), false);
      expect_block_end();
      end_stack.push_back("filter");
      s->body = subparse({"endfilter"});
      ++p;
      expect_block_end();
      end_stack.pop_back();
    } else if (tag == "generation") {
      // transformers' AssistantTracker tag: renders its body unchanged.
      s->kind = Stmt::Kind::Scope;
      expect_block_end();
      end_stack.push_back("generation");
      s->body = subparse({"endgeneration"});
      ++p;
      expect_block_end();
      end_stack.pop_back();
    } else {
      if (!end_stack.empty())
        error("Encountered unknown tag '" + tag +
                  "'. Jinja was looking for the following tags: 'end" + end_stack.back() +
                  "'. The innermost block that needs to be closed is '" + end_stack.back() + "'.",
              line);
      error("Encountered unknown tag '" + tag + "'.", line);
    }
    return s;
  }

  std::vector<std::string> assign_names(const std::set<std::string>& extra_end) {
    std::vector<std::string> names;
    bool paren = skip_op("(");
    while (true) {
      if (!names.empty()) {
        if (!skip_op(",")) break;
      }
      if (paren && is_op(")")) break;
      if (cur().type == Tok::Name && extra_end.count(cur().text)) break;
      if (cur().type != Tok::Name) error("can't assign to '" + describe(cur()) + "'");
      names.push_back(expect_name());
    }
    if (paren) expect_op(")");
    if (names.empty()) error("expected an assignment target");
    return names;
  }

  // ---- expressions ----
  bool tuple_end(const std::set<std::string>& extra) const {
    const Token& t = cur();
    if (t.type == Tok::VarEnd || t.type == Tok::BlockEnd || t.type == Tok::Eof) return true;
    if (t.type == Tok::Op && t.text == ")") return true;
    return t.type == Tok::Name && extra.count(t.text);
  }

  ExprPtr parse_tuple(bool with_cond, const std::set<std::string>& extra,
                      bool explicit_paren = false) {
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

  ExprPtr expression(bool with_cond) { return with_cond ? cond_expr() : or_expr(); }

  ExprPtr cond_expr() {
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

  ExprPtr binary_chain(Expr::Kind kind, ExprPtr (Parser::*next)(), std::string_view word) {
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
  ExprPtr or_expr() { return binary_chain(Expr::Kind::Or, &Parser::and_expr, "or"); }
  ExprPtr and_expr() { return binary_chain(Expr::Kind::And, &Parser::not_expr, "and"); }
  ExprPtr not_expr() {
    if (is_name("not")) {
      auto e = make(Expr::Kind::Not, cur().line);
      ++p;
      e->items.push_back(not_expr());
      return e;
    }
    return compare();
  }

  ExprPtr compare() {
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

  ExprPtr binop(ExprPtr (Parser::*next)(), std::initializer_list<std::string_view> ops) {
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
  ExprPtr math1() { return binop(&Parser::concat, {"+", "-"}); }
  ExprPtr concat() { return binop(&Parser::math2, {"~"}); }
  ExprPtr math2() { return binop(&Parser::pow, {"*", "/", "//", "%"}); }
  ExprPtr pow() { return binop(&Parser::unary_filtered, {"**"}); }
  ExprPtr unary_filtered() { return unary(true); }

  ExprPtr unary(bool with_filter) {
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

  ExprPtr primary() {
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
    if (skip_op("[")) {
      auto e = make(Expr::Kind::List, line);
      while (!is_op("]")) {
        if (!e->items.empty()) expect_op(",");
        if (is_op("]")) break;
        e->items.push_back(expression(true));
      }
      expect_op("]");
      return e;
    }
    if (skip_op("{")) {
      auto e = make(Expr::Kind::Dict, line);
      while (!is_op("}")) {
        if (!e->items.empty()) expect_op(",");
        if (is_op("}")) break;
        e->items.push_back(expression(true));
        expect_op(":");
        e->items.push_back(expression(true));
      }
      expect_op("}");
      return e;
    }
    error("unexpected '" + describe(t) + "'");
  }

  ExprPtr postfix(ExprPtr e) {
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

  ExprPtr filter_expr(ExprPtr e) {
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

  ExprPtr subscript(ExprPtr obj) {
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

  void call_args(std::vector<CallArg>& args) {
    expect_op("(");
    while (!is_op(")")) {
      if (!args.empty()) expect_op(",");
      if (is_op(")")) break;
      CallArg a;
      if (cur().type == Tok::Name && peek().type == Tok::Op && peek().text == "=") {
        a.name = expect_name();
        ++p;
      } else if (!args.empty() && !args.back().name.empty()) {
        error("invalid syntax for function call expression");
      }
      a.value = expression(true);
      args.push_back(std::move(a));
    }
    expect_op(")");
  }

  ExprPtr call(ExprPtr callee) {
    auto e = make(Expr::Kind::Call, cur().line);
    e->items.push_back(std::move(callee));
    call_args(e->args);
    return e;
  }

  ExprPtr filter(ExprPtr e, bool start_inline) {
    (void)start_inline;
    ++p;  // '|'
    return named_filter(std::move(e));
  }

  ExprPtr named_filter(ExprPtr e) {
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

  ExprPtr test(ExprPtr e) {
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
    } else if ((cur().type == Tok::Name || cur().type == Tok::String ||
                cur().type == Tok::Integer || cur().type == Tok::Float || is_op("(") ||
                is_op("[") || is_op("{")) &&
               !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) error("You cannot chain multiple tests with is");
      CallArg a;
      a.value = postfix(primary());
      t->args.push_back(std::move(a));
    }
    return t;
  }
};

// jinja2's compiler rejects an unknown filter or test unless it is compiled in a "soft" frame
// (inside an if statement or an inline if, with no loop, macro or block frame in between).
void check_names(const Expr& e, bool soft) {
  bool inner_soft = soft || e.kind == Expr::Kind::Cond;
  if (!soft && e.kind == Expr::Kind::Filter && !is_filter(e.name))
    throw SyntaxError{"No filter named '" + e.name + "'.", e.line};
  if (!soft && e.kind == Expr::Kind::Test && !is_test(e.name))
    throw SyntaxError{"No test named '" + e.name + "'.", e.line};
  for (const auto& x : e.items)
    if (x) check_names(*x, inner_soft);
  for (const auto& a : e.args)
    if (a.value) check_names(*a.value, inner_soft);
}

void check_names(const Body& body, bool soft) {
  for (const auto& s : body) {
    using SK = Stmt::Kind;
    switch (s->kind) {
      case SK::If:
        for (const auto& c : s->conds)
          check_names(*c, true);
        for (const auto& b : s->bodies)
          check_names(b, true);
        break;
      case SK::For:
        check_names(*s->expr, soft);
        if (s->filter) check_names(*s->filter, false);
        check_names(s->body, false);
        check_names(s->else_body, false);
        break;
      case SK::Macro:
        for (const auto& d : s->defaults)
          if (d) check_names(*d, soft);
        check_names(s->body, false);
        break;
      case SK::FilterBlock:
        check_names(*s->expr, false);
        check_names(s->body, false);
        break;
      case SK::SetBlock:
      case SK::Scope: check_names(s->body, false); break;
      default:
        if (s->expr) check_names(*s->expr, soft);
        break;
    }
  }
}

}  // namespace

Body parse(std::string_view source) {
  Parser ps;
  ps.toks = lex(source);
  Body body = ps.subparse({});
  check_names(body, false);
  return body;
}

}  // namespace luminal::io::chat

// Recursive-descent parser following jinja2/parser.py (same precedence and statement grammar):
// templates and statements, and the name check jinja2's compiler adds (the expressions are in
// parse_expr.cpp).
#include <algorithm>
#include <set>
#include <string>

#include "luminal/io/chat/ast.hpp"
#include "luminal/io/chat/parser.hpp"

namespace luminal::io::chat {

std::string Parser::describe(const Token& t) {
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

ExprPtr Parser::make(Expr::Kind k, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = k;
  e->line = line;
  return e;
}

// ---- templates ----
Body Parser::subparse(const std::set<std::string>& end_names) {
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

std::unique_ptr<Stmt> Parser::statement() {
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
      s->body = block_body("set");
    }
  } else if (tag == "macro") {
    s->kind = Stmt::Kind::Macro;
    s->name = expect_name();
    signature(*s);
    s->body = block_body("macro");
    mark_special_names(*s);
  } else if (tag == "call") {
    // {% call(params) macro(args) %}body{% endcall %}: the body is a macro named "caller".
    s->kind = Stmt::Kind::CallBlock;
    s->name = "caller";
    if (is_op("(")) signature(*s);
    s->expr = expression(true);
    if (s->expr->kind != Expr::Kind::Call) error("expected call", line);
    s->body = block_body("call");
    mark_special_names(*s);
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
    s->body = block_body("filter");
  } else if (tag == "generation") {
    // transformers' AssistantTracker tag: renders its body unchanged.
    s->kind = Stmt::Kind::Scope;
    s->body = block_body("generation");
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

void Parser::signature(Stmt& s) {
  expect_op("(");
  while (!skip_op(")")) {
    if (!s.params.empty()) expect_op(",");
    s.params.push_back(expect_name());
    s.defaults.push_back(skip_op("=") ? expression(true) : nullptr);
  }
}

namespace {

// Whether an expression or a body reads the name `n` (not inside a nested macro: it has its own).
bool reads(const Expr& e, const std::string& n) {
  if (e.kind == Expr::Kind::Name && e.name == n) return true;
  for (const auto& x : e.items)
    if (x && reads(*x, n)) return true;
  for (const auto& a : e.args)
    if (a.value && reads(*a.value, n)) return true;
  return false;
}

bool reads(const Body& body, const std::string& n) {
  for (const auto& s : body) {
    if (s->kind == Stmt::Kind::Macro) continue;
    for (const ExprPtr* e : {&s->expr, &s->filter})
      if (*e && reads(**e, n)) return true;
    for (const auto& c : s->conds)
      if (reads(*c, n)) return true;
    for (const auto& d : s->defaults)
      if (d && reads(*d, n)) return true;
    for (const Body* b : {&s->body, &s->else_body})
      if (reads(*b, n)) return true;
    for (const auto& b : s->bodies)
      if (reads(b, n)) return true;
  }
  return false;
}

}  // namespace

void Parser::mark_special_names(Stmt& m) {
  auto declared = [&](const char* n) {
    return std::find(m.params.begin(), m.params.end(), n) != m.params.end();
  };
  m.reads_varargs = !declared("varargs") && reads(m.body, "varargs");
  m.reads_kwargs = !declared("kwargs") && reads(m.body, "kwargs");
  m.reads_caller = !declared("caller") && reads(m.body, "caller");
  // jinja2's compiler: a body that calls caller() with "caller" among the parameters needs a
  // default for it.
  for (size_t k = 0; k < m.params.size(); ++k)
    if (m.params[k] == "caller" && !m.defaults[k] && reads(m.body, "caller"))
      throw SyntaxError{
          "When defining macros or call blocks the special \"caller\" argument must be omitted "
          "or be given a default.",
          m.line};
}

Body Parser::block_body(const std::string& tag) {
  expect_block_end();
  end_stack.push_back(tag);
  Body body = subparse({"end" + tag});
  ++p;
  expect_block_end();
  end_stack.pop_back();
  return body;
}

std::vector<std::string> Parser::assign_names(const std::set<std::string>& extra_end) {
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

namespace {

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
      case SK::CallBlock:
        for (const auto& d : s->defaults)
          if (d) check_names(*d, soft);
        check_names(*s->expr, soft);
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

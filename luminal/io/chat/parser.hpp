#pragma once
// The recursive-descent parser of chat templates (internal): token helpers, statements
// (parser.cpp) and expressions (parse_expr.cpp), following jinja2/parser.py (same precedence and
// statement grammar).
#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "luminal/io/chat/ast.hpp"

namespace luminal::io::chat {

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

  /// A token as jinja2's messages name it.
  static std::string describe(const Token& t);
  /// A new expression node of kind k at `line`.
  static ExprPtr make(Expr::Kind k, int line);

  // ---- templates (parser.cpp) ----
  Body subparse(const std::set<std::string>& end_names);
  std::unique_ptr<Stmt> statement();
  /// The body of a block after its opening tag, through {% end<tag> %} (the end tag consumed).
  Body block_body(const std::string& tag);
  std::vector<std::string> assign_names(const std::set<std::string>& extra_end);
  /// A macro's or call block's parameter list, "(a, b=1)".
  void signature(Stmt& s);
  /// Sets the reads_* flags of a macro or call block from its body.
  static void mark_special_names(Stmt& m);

  // ---- expressions (parse_expr.cpp) ----
  bool tuple_end(const std::set<std::string>& extra) const;
  ExprPtr parse_tuple(bool with_cond, const std::set<std::string>& extra,
                      bool explicit_paren = false);
  ExprPtr expression(bool with_cond);
  ExprPtr cond_expr();
  ExprPtr binary_chain(Expr::Kind kind, ExprPtr (Parser::*next)(), std::string_view word);
  ExprPtr or_expr();
  ExprPtr and_expr();
  ExprPtr not_expr();
  ExprPtr compare();
  ExprPtr binop(ExprPtr (Parser::*next)(), std::initializer_list<std::string_view> ops);
  ExprPtr math1();
  ExprPtr concat();
  ExprPtr math2();
  ExprPtr pow();
  ExprPtr unary_filtered();
  ExprPtr unary(bool with_filter);
  ExprPtr primary();
  ExprPtr postfix(ExprPtr e);
  ExprPtr filter_expr(ExprPtr e);
  ExprPtr subscript(ExprPtr obj);
  void call_args(std::vector<CallArg>& args);
  ExprPtr call(ExprPtr callee);
  ExprPtr filter(ExprPtr e, bool start_inline);
  ExprPtr named_filter(ExprPtr e);
  ExprPtr test(ExprPtr e);
};

}  // namespace luminal::io::chat

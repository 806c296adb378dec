#pragma once
// A compact, exact text form of an Expr for caches on disk: write_expr(e) gives a prefix form like
// "(+ (* 4 s) z)", and read_expr of it gives back e (the same canonical node).
// Example: examples/snippets/core/expr_serial.cpp.
//
// Constants are decimal, variables their names, every other node "(op child child ...)" with op
// one of + * / % min max < <= == != and or. read_expr throws luminal::Error on malformed text.
#include <string>
#include <string_view>

#include "luminal/core/expr.hpp"
#include "luminal/core/shape.hpp"

namespace luminal {

std::string write_expr(const Expr& e);
Expr read_expr(std::string_view text);
/// Reads one expression from the front of `text` and advances it past it (and past spaces).
Expr read_expr_prefix(std::string_view& text);

/// A View as "rank dims.. strides.. base" (payloads that carry a view: the CUDA GEMV forms').
std::string write_view(const View& v);
/// Reads write_view's text from the front of `text` and advances past it; throws luminal::Error
/// naming `what` for a rank outside 1..16 or a malformed expression.
View read_view_prefix(std::string_view& text, std::string_view what);

}  // namespace luminal

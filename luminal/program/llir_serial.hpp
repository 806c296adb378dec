#pragma once
// The LLIR as exact text, for the compile cache:
//
//   std::string text = write_llir(program);
//   LlirGraph back = read_llir(text, backend);   // ops by name, payloads by kind
//
// One line per node, tab-separated: op, inputs, then every attribute (Exprs in write_expr form,
// floats as their bit patterns, the payload as kind and serialised text). read_llir throws
// luminal::Error naming the line for anything it cannot read (an unknown op or payload kind,
// malformed fields).
#include <string>
#include <string_view>

#include "luminal/program/backend.hpp"
#include "luminal/program/llir.hpp"

namespace luminal {

std::string write_llir(const LlirGraph& g);
LlirGraph read_llir(std::string_view text, const Backend& backend);

}  // namespace luminal

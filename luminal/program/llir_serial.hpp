#pragma once
// The LLIR as exact text, for the compile cache: write_llir, and read_llir with the backend that
// names the ops and reads the payloads by kind. Example: examples/snippets/program/llir_serial.cpp.
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

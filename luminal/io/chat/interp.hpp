#pragma once
// The tree-walking interpreter's state (internal).
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include "luminal/io/chat/ast.hpp"

namespace luminal::io::chat {

struct Frame {
  std::unordered_map<std::string, Value> vars;
  Frame* parent = nullptr;
};

struct Interp {
  const Program* program = nullptr;
  Frame* root = nullptr;
  int depth = 0;  // macro call depth, bounded

  enum class Flow { Normal, Break, Continue };

  Value lookup(Frame& f, const std::string& name) const;
  Value eval(const Expr& e, Frame& f);
  Flow exec(const Body& body, Frame& f, std::string& out);
  Flow exec(const Stmt& s, Frame& f, std::string& out);
  Value call(const Value& callee, Args& args, Kwargs& kwargs);
};

}  // namespace luminal::io::chat

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
  /// The arguments of a call, filter or test (*seq and **mapping unpacked).
  void eval_args(const Expr& e, Frame& f, Args& args, Kwargs& kwargs);
  /// A macro (or a {% call %} block's caller) as a callable binding its arguments as jinja2's
  /// Macro.__call__ does (varargs, kwargs and caller where the body reads them); its body runs
  /// in a frame over `scope`, which `keep` (may be null) keeps alive. macros.cpp.
  Value make_macro(const Stmt& m, Frame* scope, std::shared_ptr<Frame> keep = nullptr);
};

}  // namespace luminal::io::chat

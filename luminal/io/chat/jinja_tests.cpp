// The tests of `x is name(...)` with the semantics of jinja2 3.1 (jinja2/tests.py).
#include <set>
#include <string>

#include "luminal/io/chat/builtin_util.hpp"
#include "luminal/io/chat/interp.hpp"

namespace luminal::io::chat {

using K = Value::Kind;

namespace {

const std::set<std::string, std::less<>>& test_names() {
  static const std::set<std::string, std::less<>> names{
      "defined",  "undefined", "none",    "boolean",     "false",    "true",        "integer",
      "float",    "number",    "string",  "mapping",     "iterable", "sequence",    "callable",
      "sameas",   "eq",        "equalto", "==",          "ne",       "!=",          "lt",
      "lessthan", "<",         "le",      "<=",          "gt",       "greaterthan", ">",
      "ge",       ">=",        "in",      "divisibleby", "even",     "odd",         "lower",
      "upper",    "escaped",   "filter",  "test"};
  return names;
}

}  // namespace

bool is_test(std::string_view name) { return test_names().count(name) > 0; }

bool apply_test(Interp& in, const std::string& name, const Value& v, Args& args) {
  (void)in;
  auto need = [&](size_t n) {
    if (args.size() < n) fail("test '" + name + "' needs " + std::to_string(n) + " argument(s)");
  };
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.kind == K::Bool;
  if (name == "false") return v.kind == K::Bool && !v.b;
  if (name == "true") return v.kind == K::Bool && v.b;
  if (name == "integer") return v.kind == K::Int;
  if (name == "float") return v.kind == K::Float;
  if (name == "number") return v.is_number();
  if (name == "string") return v.kind == K::String;
  if (name == "mapping") return v.kind == K::Dict;
  if (name == "iterable")
    return v.kind == K::String || v.kind == K::List || v.kind == K::Dict || v.is_undefined();
  if (name == "sequence")
    return v.kind == K::String || (v.kind == K::List && !v.is_generator) || v.kind == K::Dict ||
           v.is_undefined();
  if (name == "callable") return v.kind == K::Callable;
  if (name == "escaped") return false;
  if (name == "filter") return v.kind == K::String && is_filter(v.s);
  if (name == "test") return v.kind == K::String && is_test(v.s);
  if (name == "sameas") {
    need(1);
    const Value& o = args[0];
    if (v.kind != o.kind) return false;
    if (v.kind == K::List) return v.list == o.list;
    if (v.kind == K::Dict || v.kind == K::Namespace) return v.dict == o.dict;
    return equals(v, o);
  }
  if (name == "eq" || name == "equalto" || name == "==") return need(1), equals(v, args[0]);
  if (name == "ne" || name == "!=") return need(1), !equals(v, args[0]);
  if (name == "lt" || name == "lessthan" || name == "<") return need(1), less(v, args[0]);
  if (name == "le" || name == "<=") return need(1), less(v, args[0]) || equals(v, args[0]);
  if (name == "gt" || name == "greaterthan" || name == ">") return need(1), less(args[0], v);
  if (name == "ge" || name == ">=") return need(1), less(args[0], v) || equals(v, args[0]);
  if (name == "in") {
    need(1);
    const Value& c = args[0];
    if (c.kind == K::String) return v.kind == K::String && c.s.find(v.s) != std::string::npos;
    for (const auto& x : iterate(c))
      if (equals(x, v)) return true;
    return false;
  }
  if (name == "divisibleby") {
    need(1);
    int64_t d = args[0].as_int();
    if (d == 0) fail("integer division or modulo by zero");
    return v.as_int() % d == 0;
  }
  if (name == "even") return v.as_int() % 2 == 0;
  if (name == "odd") return v.as_int() % 2 != 0;
  if (name == "lower" || name == "upper") {
    std::string s = to_str(v);
    bool cased = false;
    for (auto ch : utf8_chars(s))
      cased = cased || is_cased(ch);
    return cased && (name == "lower" ? py_lower(s) == s : py_upper(s) == s);
  }
  fail("No test named '" + name + "' found.");
}

}  // namespace luminal::io::chat

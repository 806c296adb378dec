// The tests of `x is name(...)` with the semantics of jinja2 3.1 (jinja2/tests.py).
#include <map>
#include <string>
#include <string_view>

#include "luminal/io/chat/builtin_util.hpp"
#include "luminal/io/chat/interp.hpp"

namespace luminal::io::chat {

using K = Value::Kind;

namespace {

// A test: how many arguments it needs, and whether `v` passes it.
struct Test {
  size_t args;
  bool (*passes)(const Value& v, const Args& args);
};

// lower / upper: the text has a cased character and is unchanged by the case mapping.
bool cased_as(const Value& v, std::string (*map)(std::string_view)) {
  std::string s = to_str(v);
  bool cased = false;
  for (auto ch : utf8_chars(s))
    cased = cased || is_cased(ch);
  return cased && map(s) == s;
}

// Every test by name (each alias with its own entry).
const std::map<std::string, Test, std::less<>>& tests() {
  using A = const Args&;
  auto eq = [](const Value& v, A a) { return equals(v, a[0]); };
  auto lt = [](const Value& v, A a) { return less(v, a[0]); };
  auto gt = [](const Value& v, A a) { return less(a[0], v); };
  auto ne = [](const Value& v, A a) { return !equals(v, a[0]); };
  auto le = [](const Value& v, A a) { return less(v, a[0]) || equals(v, a[0]); };
  auto ge = [](const Value& v, A a) { return less(a[0], v) || equals(v, a[0]); };
  static const std::map<std::string, Test, std::less<>> t{
      {"defined", {0, [](const Value& v, A) { return !v.is_undefined(); }}},
      {"undefined", {0, [](const Value& v, A) { return v.is_undefined(); }}},
      {"none", {0, [](const Value& v, A) { return v.is_none(); }}},
      {"boolean", {0, [](const Value& v, A) { return v.kind == K::Bool; }}},
      {"false", {0, [](const Value& v, A) { return v.kind == K::Bool && !v.b; }}},
      {"true", {0, [](const Value& v, A) { return v.kind == K::Bool && v.b; }}},
      {"integer", {0, [](const Value& v, A) { return v.kind == K::Int; }}},
      {"float", {0, [](const Value& v, A) { return v.kind == K::Float; }}},
      {"number", {0, [](const Value& v, A) { return v.is_number(); }}},
      {"string", {0, [](const Value& v, A) { return v.kind == K::String; }}},
      {"mapping", {0, [](const Value& v, A) { return v.kind == K::Dict; }}},
      {"iterable",
       {0,
        [](const Value& v, A) {
          return v.kind == K::String || v.kind == K::List || v.kind == K::Dict || v.is_undefined();
        }}},
      {"sequence",
       {0,
        [](const Value& v, A) {
          return v.kind == K::String || (v.kind == K::List && !v.is_generator) ||
                 v.kind == K::Dict || v.is_undefined();
        }}},
      {"callable", {0, [](const Value& v, A) { return v.kind == K::Callable; }}},
      {"escaped", {0, [](const Value&, A) { return false; }}},
      {"filter", {0, [](const Value& v, A) { return v.kind == K::String && is_filter(v.s); }}},
      {"test", {0, [](const Value& v, A) { return v.kind == K::String && is_test(v.s); }}},
      {"sameas",
       {1,
        [](const Value& v, A a) {
          const Value& o = a[0];
          if (v.kind != o.kind) return false;
          if (v.kind == K::List) return v.list == o.list;
          if (v.kind == K::Dict || v.kind == K::Namespace) return v.dict == o.dict;
          return equals(v, o);
        }}},
      {"eq", {1, eq}},
      {"equalto", {1, eq}},
      {"==", {1, eq}},
      {"ne", {1, ne}},
      {"!=", {1, ne}},
      {"lt", {1, lt}},
      {"lessthan", {1, lt}},
      {"<", {1, lt}},
      {"le", {1, le}},
      {"<=", {1, le}},
      {"gt", {1, gt}},
      {"greaterthan", {1, gt}},
      {">", {1, gt}},
      {"ge", {1, ge}},
      {">=", {1, ge}},
      {"in",
       {1,
        [](const Value& v, A a) {
          const Value& c = a[0];
          if (c.kind == K::String) return v.kind == K::String && c.s.find(v.s) != std::string::npos;
          for (const auto& x : iterate(c))
            if (equals(x, v)) return true;
          return false;
        }}},
      {"divisibleby",
       {1,
        [](const Value& v, A a) {
          int64_t d = a[0].as_int();
          if (d == 0) fail("integer division or modulo by zero");
          return v.as_int() % d == 0;
        }}},
      {"even", {0, [](const Value& v, A) { return v.as_int() % 2 == 0; }}},
      {"odd", {0, [](const Value& v, A) { return v.as_int() % 2 != 0; }}},
      {"lower", {0, [](const Value& v, A) { return cased_as(v, py_lower); }}},
      {"upper", {0, [](const Value& v, A) { return cased_as(v, py_upper); }}},
  };
  return t;
}

}  // namespace

bool is_test(std::string_view name) { return tests().count(name) > 0; }

bool apply_test(Interp& in, const std::string& name, const Value& v, Args& args) {
  (void)in;
  auto it = tests().find(name);
  if (it == tests().end()) fail("No test named '" + name + "' found.");
  const Test& test = it->second;
  if (args.size() < test.args)
    fail("test '" + name + "' needs " + std::to_string(test.args) + " argument(s)");
  return test.passes(v, args);
}

}  // namespace luminal::io::chat

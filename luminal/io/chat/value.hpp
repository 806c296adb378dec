#pragma once
// The dynamic value of the chat-template interpreter: Python's None/bool/int/float/str/list/
// tuple/dict plus jinja2's Undefined, namespace() objects and callables (macros, builtins, bound
// methods). Semantics follow Python (truthiness, ==, <, +, str(), repr()) because the reference is
// jinja2 running on Python.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace luminal::io::chat {

/// A runtime error; `line` is filled in by the innermost expression or statement that knows it.
struct RenderError {
  std::string message;
  int line = 0;
};
[[noreturn]] void fail(std::string message);

struct Value;
using List = std::vector<Value>;
struct Dict;
struct Kwarg;
using Args = std::vector<Value>;
using Kwargs = std::vector<Kwarg>;
using Function = std::function<Value(Args&, Kwargs&)>;

struct Value {
  enum class Kind : uint8_t {
    Undefined,
    None,
    Bool,
    Int,
    Float,
    String,
    List,
    Dict,
    Namespace,
    Callable
  };
  Kind kind = Kind::Undefined;
  bool is_tuple = false;  // a List that Python would hold as a tuple (printing only)
  // A List that jinja2 holds as a generator (map/select/reject...): always true, no len(), not
  // JSON serializable.
  bool is_generator = false;
  bool is_markup = false;  // a String that jinja2 holds as markupsafe.Markup (|safe, |escape)
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;  // String; for Undefined, the error message attribute access raises
  std::shared_ptr<List> list;
  std::shared_ptr<Dict> dict;  // Dict and Namespace (namespaces are mutable and shared)
  std::shared_ptr<Function> fn;

  Value() = default;
  static Value undefined(std::string message);
  static Value none();
  static Value boolean(bool v);
  static Value integer(int64_t v);
  static Value floating(double v);
  static Value string(std::string v);
  static Value make_list(List items = {});
  static Value generator(List items);
  static Value markup(std::string v);
  static Value tuple(List items);
  static Value make_dict();
  static Value make_namespace();
  static Value callable(Function f);

  bool is_undefined() const { return kind == Kind::Undefined; }
  bool is_none() const { return kind == Kind::None; }
  bool is_string() const { return kind == Kind::String; }
  bool is_number() const { return kind == Kind::Bool || kind == Kind::Int || kind == Kind::Float; }
  bool is_integral() const { return kind == Kind::Bool || kind == Kind::Int; }
  bool truthy() const;
  double as_double() const;
  int64_t as_int() const;  // bool/int
  /// Python's type name ("str", "int", "NoneType", ...).
  std::string_view type_name() const;
};

struct Kwarg {
  std::string name;
  Value value;
};

/// An insertion-ordered dictionary (Python dicts keep insertion order; tojson relies on it).
struct Dict {
  std::vector<std::pair<Value, Value>> items;
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  void set(Value key, Value value);
};

bool equals(const Value& a, const Value& b);
/// Python's a < b; throws for unorderable types.
bool less(const Value& a, const Value& b);
/// Python's str(v) (jinja2 prints undefined as "").
std::string to_str(const Value& v);
std::string repr(const Value& v);
std::string py_float_repr(double d);

// UTF-8 helpers: Python indexes strings by code point.
std::vector<std::string_view> utf8_chars(std::string_view s);
size_t utf8_length(std::string_view s);
bool is_py_space(uint32_t cp);
/// Strip Python whitespace (or the given characters) from the ends.
std::string py_strip(std::string_view s, bool left, bool right, const Value* chars = nullptr);
std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);

}  // namespace luminal::io::chat

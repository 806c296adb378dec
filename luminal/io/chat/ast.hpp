#pragma once
// Tokens, syntax tree and entry points of the chat-template interpreter (internal).
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "luminal/io/chat/value.hpp"

namespace luminal::io::chat {

/// A syntax error found while lexing or parsing.
struct SyntaxError {
  std::string message;
  int line = 0;
};

enum class Tok {
  Data,        // text between tags (already whitespace-controlled)
  VarBegin,    // {{
  VarEnd,      // }}
  BlockBegin,  // {%
  BlockEnd,    // %}
  Name,
  String,
  Integer,
  Float,
  Op,  // operator text in `text`
  Eof,
};

struct Token {
  Tok type;
  std::string text;  // Data/Name/Op text, the decoded String, the Integer/Float spelling
  int line;
};

/// jinja2's lexer with trim_blocks and lstrip_blocks on (as transformers configures it).
std::vector<Token> lex(std::string_view source);

// ---- expressions ----
struct Expr;
using ExprPtr = std::unique_ptr<Expr>;
struct CallArg {
  std::string name;  // empty for positional; "*" and "**" for *args and **kwargs unpacking
  ExprPtr value;
};

struct Expr {
  enum class Kind {
    Const,
    Name,
    List,     // items
    Tuple,    // items
    Dict,     // items as key, value pairs
    Getattr,  // a.name
    Getitem,  // a[b]
    Slice,    // a[b:c:d] (null parts are absent)
    Call,     // a(args)
    Filter,   // a | name(args)
    Test,     // a is [not] name(args)
    Neg,
    Pos,
    Not,
    And,
    Or,
    Binary,   // op: + - * / // % ** ~
    Compare,  // a op b op c ... (ops: == != < <= > >= in notin)
    Cond,     // a if b else c
  };
  Kind kind;
  int line = 0;
  Value value;       // Const
  std::string name;  // Name, Getattr attribute, Filter/Test name, Binary operator
  bool negated = false;
  std::vector<ExprPtr> items;    // operands / list items / dict k,v pairs / slice parts
  std::vector<std::string> ops;  // Compare operators
  std::vector<CallArg> args;
};

// ---- statements ----
struct Stmt;
using Body = std::vector<std::unique_ptr<Stmt>>;

struct Stmt {
  enum class Kind {
    Output,
    Print,
    If,
    For,
    Set,
    SetBlock,
    FilterBlock,
    Macro,
    CallBlock,  // {% call(params) expr %}body{% endcall %}: expr with caller=<the body>
    Break,
    Continue,
    Scope
  };
  Kind kind;
  int line = 0;
  std::string text;  // Output
  ExprPtr expr;      // Print / Set value / For iterable / If test
  // If: conditions and bodies (elif chain flattened; else is a body without condition)
  std::vector<ExprPtr> conds;
  std::vector<Body> bodies;
  // For / Set targets: names, or (Set only) namespace `name.attr`
  std::vector<std::string> targets;
  std::string attr;  // Set: namespace attribute
  ExprPtr filter;    // For: `if` filter
  Body body, else_body;
  // Macro (and a CallBlock's caller): name, parameters, and which of jinja2's special names the
  // body reads (varargs: extra positional arguments; kwargs: extra keyword arguments; caller:
  // the body of a {% call %} block)
  std::string name;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;  // aligned with params; null when none
  bool reads_varargs = false, reads_kwargs = false, reads_caller = false;
};

struct Program {
  std::string name;
  std::string source;
  Body body;
};

/// Parses a template; throws SyntaxError.
Body parse(std::string_view source);

/// The variable a {% filter %} block's filter chain reads its rendered body from.
inline constexpr std::string_view kFilterBlockBody = "\x01filter-body";

/// Known filter and test names. As in jinja2, an unknown one is a syntax error unless it sits
/// inside an `if` (statement or expression) without a loop/macro/block in between; there it fails
/// only when it runs.
bool is_filter(std::string_view name);
bool is_test(std::string_view name);

struct Interp;
Value apply_filter(Interp& in, const std::string& name, Value v, Args& args, Kwargs& kwargs);
bool apply_test(Interp& in, const std::string& name, const Value& v, Args& args);
/// obj.name and obj[key] as jinja2's sandboxed environment resolves them.
Value get_attr(const Value& obj, const std::string& name);
Value get_item(const Value& obj, const Value& key);
/// Python's str/dict methods bound to `self`, or Undefined when there is none.
Value method(const Value& self, const std::string& name);
/// Iterates like Python `for x in v` (dict keys, string chars, undefined empty).
List iterate(const Value& v);
/// Global functions: range, namespace, dict, raise_exception, strftime_now.
void add_globals(std::map<std::string, Value>& globals);
std::string to_json(const Value& v, const Value& indent, const std::string& item_sep,
                    const std::string& key_sep, bool sort_keys, bool ensure_ascii);

/// Renders; throws RenderError.
std::string render(const Program& program, std::map<std::string, Value> vars);

}  // namespace luminal::io::chat

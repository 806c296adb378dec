// Evaluates the syntax tree with jinja2's runtime semantics: scoping (a `for` body is a new scope
// per iteration; `if` is not a scope; macros see the template's top level), Python operators,
// jinja2's default Undefined (prints empty, is falsy, fails on attribute access or arithmetic).
#include <algorithm>
#include <cmath>
#include <optional>

#include "luminal/io/chat/builtin_util.hpp"
#include "luminal/io/chat/interp.hpp"

namespace luminal::io::chat {
namespace {

Value arith(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") return Value::string(to_str(a) + to_str(b));
  if (a.is_undefined()) fail(a.s);
  if (b.is_undefined()) fail(b.s);
  using K = Value::Kind;
  auto unsupported = [&]() {
    return ("unsupported operand type(s) for " + op + ": '" + std::string(a.type_name()) +
            "' and '" + std::string(b.type_name()) + "'");
  };
  if (a.is_number() && b.is_number()) {
    bool fl = a.kind == K::Float || b.kind == K::Float;
    if (op == "/") {
      if (b.as_double() == 0) fail("division by zero");
      return Value::floating(a.as_double() / b.as_double());
    }
    if (fl) {
      double x = a.as_double(), y = b.as_double();
      if (op == "+") return Value::floating(x + y);
      if (op == "-") return Value::floating(x - y);
      if (op == "*") return Value::floating(x * y);
      if (op == "**") return Value::floating(std::pow(x, y));
      if (y == 0) fail("float division by zero");
      if (op == "//") return Value::floating(std::floor(x / y));
      if (op == "%") {
        double m = std::fmod(x, y);
        if (m != 0 && ((m < 0) != (y < 0))) m += y;
        return Value::floating(m);
      }
    } else {
      int64_t x = a.as_int(), y = b.as_int();
      if (op == "+") return Value::integer(x + y);
      if (op == "-") return Value::integer(x - y);
      if (op == "*") return Value::integer(x * y);
      if (op == "**") {
        if (y < 0) return Value::floating(std::pow(static_cast<double>(x), static_cast<double>(y)));
        int64_t r = 1;
        for (int64_t k = 0; k < y; ++k)
          r *= x;
        return Value::integer(r);
      }
      if (y == 0) fail("integer division or modulo by zero");
      int64_t q = x / y, m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) {
        q -= 1;
        m += y;
      }
      if (op == "//") return Value::integer(q);
      if (op == "%") return Value::integer(m);
    }
    fail(unsupported());
  }
  if (op == "+") {
    if ((a.kind == K::String && a.is_markup) || (b.kind == K::String && b.is_markup)) {
      // markupsafe.Markup.__add__ / __radd__: the plain side is escaped, the result is Markup.
      if (a.kind != K::String || b.kind != K::String) fail(unsupported());
      return Value::markup((a.is_markup ? a.s : html_escape(a.s)) +
                           (b.is_markup ? b.s : html_escape(b.s)));
    }
    if (a.kind == K::String && b.kind == K::String) return Value::string(a.s + b.s);
    if (a.kind == K::List && b.kind == K::List && !a.is_generator && !b.is_generator) {
      List items = *a.list;
      items.insert(items.end(), b.list->begin(), b.list->end());
      return a.is_tuple ? Value::tuple(std::move(items)) : Value::make_list(std::move(items));
    }
  }
  if (op == "*") {
    const Value* seq = a.is_integral() ? &b : &a;
    const Value* n = a.is_integral() ? &a : &b;
    if (n->is_integral() && (seq->kind == K::String || seq->kind == K::List) &&
        !seq->is_generator) {
      int64_t times = std::max<int64_t>(0, n->as_int());
      if (seq->kind == K::String) {
        std::string out;
        for (int64_t k = 0; k < times; ++k)
          out += seq->s;
        return seq->is_markup ? Value::markup(out) : Value::string(out);
      }
      List items;
      for (int64_t k = 0; k < times; ++k)
        items.insert(items.end(), seq->list->begin(), seq->list->end());
      return Value::make_list(std::move(items));
    }
  }
  fail(unsupported());
}

bool contains(const Value& container, const Value& x) {
  using K = Value::Kind;
  switch (container.kind) {
    case K::String:
      if (x.kind != K::String)
        fail("'in <string>' requires string as left operand, not " + std::string(x.type_name()));
      return container.s.find(x.s) != std::string::npos;
    case K::List:
      for (const auto& v : *container.list)
        if (equals(v, x)) return true;
      return false;
    case K::Dict:
    case K::Namespace: return container.dict->find(x) != nullptr;
    case K::Undefined: return false;
    default: fail("argument of type '" + std::string(container.type_name()) + "' is not iterable");
  }
}

bool compare(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return equals(a, b);
  if (op == "!=") return !equals(a, b);
  if (op == "in") return contains(b, a);
  if (op == "notin") return !contains(b, a);
  if (a.is_undefined()) fail(a.s);
  if (b.is_undefined()) fail(b.s);
  if (op == "<") return less(a, b);
  if (op == ">") return less(b, a);
  if (op == "<=") return less(a, b) || equals(a, b);
  return less(b, a) || equals(a, b);  // >=
}

Value slice(const Value& obj, const Value& a, const Value& b, const Value& c) {
  using K = Value::Kind;
  if (obj.is_undefined()) fail(obj.s);
  auto opt = [](const Value& v, const char* what) -> std::optional<int64_t> {
    if (v.is_undefined() || v.is_none()) return std::nullopt;
    if (!v.is_integral())
      fail(std::string("slice ") + what + " must be an integer or None, got " +
           std::string(v.type_name()));
    return v.as_int();
  };
  int64_t step = opt(c, "step").value_or(1);
  if (step == 0) fail("slice step cannot be zero");
  std::vector<std::string_view> chars;
  int64_t len = 0;
  if (obj.kind == K::String) {
    chars = utf8_chars(obj.s);
    len = static_cast<int64_t>(chars.size());
  } else if (obj.kind == K::List) {
    len = static_cast<int64_t>(obj.list->size());
  } else {
    fail("'" + std::string(obj.type_name()) + "' object is not subscriptable");
  }
  int64_t lower = step > 0 ? 0 : -1, upper = step > 0 ? len : len - 1;
  auto adjust = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x += len;
      if (x < lower) x = lower;
    } else if (x > upper) {
      x = upper;
    }
    return x;
  };
  int64_t start = adjust(opt(a, "start"), step > 0 ? lower : upper);
  int64_t stop = adjust(opt(b, "stop"), step > 0 ? upper : lower);
  std::string s;
  List items;
  for (int64_t k = start; step > 0 ? k < stop : k > stop; k += step) {
    if (obj.kind == K::String) {
      s += chars[static_cast<size_t>(k)];
    } else {
      items.push_back((*obj.list)[static_cast<size_t>(k)]);
    }
  }
  if (obj.kind == K::String) return Value::string(s);
  return obj.is_tuple ? Value::tuple(std::move(items)) : Value::make_list(std::move(items));
}

void unpack(Frame& f, const std::vector<std::string>& names, const Value& v) {
  if (names.size() == 1) {
    f.vars[names[0]] = v;
    return;
  }
  List items = iterate(v);
  if (items.size() != names.size())
    fail(items.size() > names.size()
             ? "too many values to unpack (expected " + std::to_string(names.size()) + ")"
             : "not enough values to unpack (expected " + std::to_string(names.size()) + ", got " +
                   std::to_string(items.size()) + ")");
  for (size_t k = 0; k < names.size(); ++k)
    f.vars[names[k]] = items[k];
}

}  // namespace

Value Interp::lookup(Frame& f, const std::string& name) const {
  for (Frame* p = &f; p; p = p->parent) {
    auto it = p->vars.find(name);
    if (it != p->vars.end()) return it->second;
  }
  return Value::undefined("'" + name + "' is undefined");
}

Value Interp::call(const Value& callee, Args& args, Kwargs& kwargs) {
  if (callee.is_undefined()) fail(callee.s);
  if (callee.kind != Value::Kind::Callable)
    fail("'" + std::string(callee.type_name()) + "' object is not callable");
  return (*callee.fn)(args, kwargs);
}

void Interp::eval_args(const Expr& e, Frame& f, Args& args, Kwargs& kwargs) {
  for (const auto& a : e.args) {
    if (a.name.empty()) {
      args.push_back(eval(*a.value, f));
    } else if (a.name == "*") {  // f(*seq): the items as positional arguments
      Value seq = eval(*a.value, f);
      if (seq.kind != Value::Kind::List && seq.kind != Value::Kind::String &&
          seq.kind != Value::Kind::Dict && seq.kind != Value::Kind::Undefined)
        fail("argument after * must be an iterable, not " + std::string(seq.type_name()));
      for (Value& v : iterate(seq))
        args.push_back(std::move(v));
    } else if (a.name == "**") {  // f(**mapping): its items as keyword arguments
      Value map = eval(*a.value, f);
      if (map.kind != Value::Kind::Dict && map.kind != Value::Kind::Namespace)
        fail("argument after ** must be a mapping, not " + std::string(map.type_name()));
      for (const auto& [k, v] : map.dict->items) {
        if (k.kind != Value::Kind::String) fail("keywords must be strings");
        for (const auto& kw : kwargs)
          if (kw.name == k.s) fail("got multiple values for keyword argument '" + k.s + "'");
        kwargs.push_back({k.s, v});
      }
    } else {
      kwargs.push_back({a.name, eval(*a.value, f)});
    }
  }
}

Value Interp::eval(const Expr& e, Frame& f) {
  using K = Expr::Kind;
  try {
    switch (e.kind) {
      case K::Const: return e.value;
      case K::Name: return lookup(f, e.name);
      case K::List:
      case K::Tuple: {
        List items;
        for (const auto& x : e.items)
          items.push_back(eval(*x, f));
        return e.kind == K::Tuple ? Value::tuple(std::move(items))
                                  : Value::make_list(std::move(items));
      }
      case K::Dict: {
        Value d = Value::make_dict();
        for (size_t k = 0; k + 1 < e.items.size(); k += 2)
          d.dict->set(eval(*e.items[k], f), eval(*e.items[k + 1], f));
        return d;
      }
      case K::Getattr: {
        Value obj = eval(*e.items[0], f);
        if (obj.is_undefined()) fail(obj.s);
        return get_attr(obj, e.name);
      }
      case K::Getitem: {
        Value obj = eval(*e.items[0], f);
        Value key = eval(*e.items[1], f);
        if (obj.is_undefined()) fail(obj.s);
        return get_item(obj, key);
      }
      case K::Slice: {
        auto part = [&](size_t k) { return e.items[k] ? eval(*e.items[k], f) : Value::none(); };
        Value obj = eval(*e.items[0], f);
        return slice(obj, part(1), part(2), part(3));
      }
      case K::Call:
      case K::Filter:
      case K::Test: {
        Value first = eval(*e.items[0], f);
        Args args;
        Kwargs kwargs;
        eval_args(e, f, args, kwargs);
        if (e.kind == K::Call) return call(first, args, kwargs);
        if (e.kind == K::Filter) return apply_filter(*this, e.name, std::move(first), args, kwargs);
        return Value::boolean(apply_test(*this, e.name, first, args) != e.negated);
      }
      case K::Neg:
      case K::Pos: {
        Value v = eval(*e.items[0], f);
        if (v.is_undefined()) fail(v.s);
        if (!v.is_number())
          fail("bad operand type for unary " + std::string(e.kind == K::Neg ? "-" : "+") + ": '" +
               std::string(v.type_name()) + "'");
        if (e.kind == K::Pos) return v.kind == Value::Kind::Bool ? Value::integer(v.as_int()) : v;
        if (v.kind == Value::Kind::Float) return Value::floating(-v.f);
        return Value::integer(-v.as_int());
      }
      case K::Not: return Value::boolean(!eval(*e.items[0], f).truthy());
      case K::And: {
        Value a = eval(*e.items[0], f);
        return a.truthy() ? eval(*e.items[1], f) : a;
      }
      case K::Or: {
        Value a = eval(*e.items[0], f);
        return a.truthy() ? a : eval(*e.items[1], f);
      }
      case K::Binary: return arith(e.name, eval(*e.items[0], f), eval(*e.items[1], f));
      case K::Compare: {
        Value left = eval(*e.items[0], f);
        for (size_t k = 0; k < e.ops.size(); ++k) {
          Value right = eval(*e.items[k + 1], f);
          if (!compare(e.ops[k], left, right)) return Value::boolean(false);
          left = std::move(right);
        }
        return Value::boolean(true);
      }
      case K::Cond: {
        if (eval(*e.items[1], f).truthy()) return eval(*e.items[0], f);
        if (e.items[2]) return eval(*e.items[2], f);
        return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                                " evaluated to false and no else section was defined.");
      }
    }
  } catch (RenderError& err) {
    if (err.line == 0) err.line = e.line;
    throw;
  }
  return {};
}

Interp::Flow Interp::exec(const Body& body, Frame& f, std::string& out) {
  for (const auto& s : body) {
    Flow fl = exec(*s, f, out);
    if (fl != Flow::Normal) return fl;
  }
  return Flow::Normal;
}

Interp::Flow Interp::exec(const Stmt& s, Frame& f, std::string& out) {
  using K = Stmt::Kind;
  try {
    switch (s.kind) {
      case K::Output: out += s.text; break;
      case K::Print: out += to_str(eval(*s.expr, f)); break;
      case K::If:
        for (size_t k = 0; k < s.bodies.size(); ++k) {
          if (k >= s.conds.size() || eval(*s.conds[k], f).truthy())
            return exec(s.bodies[k], f, out);
        }
        break;
      case K::For: {
        Value seq = eval(*s.expr, f);
        if (seq.is_none() || seq.kind == Value::Kind::Int || seq.kind == Value::Kind::Float ||
            seq.kind == Value::Kind::Bool)
          fail("'" + std::string(seq.type_name()) + "' object is not iterable");
        List items = iterate(seq);
        if (s.filter) {
          List kept;
          for (auto& item : items) {
            Frame probe{{}, &f};
            unpack(probe, s.targets, item);
            if (eval(*s.filter, probe).truthy()) kept.push_back(item);
          }
          items = std::move(kept);
        }
        auto n = static_cast<int64_t>(items.size());
        for (int64_t k = 0; k < n; ++k) {
          Frame body{{}, &f};
          unpack(body, s.targets, items[static_cast<size_t>(k)]);
          Value loop = Value::make_dict();
          Dict& d = *loop.dict;
          d.set(Value::string("index"), Value::integer(k + 1));
          d.set(Value::string("index0"), Value::integer(k));
          d.set(Value::string("revindex"), Value::integer(n - k));
          d.set(Value::string("revindex0"), Value::integer(n - k - 1));
          d.set(Value::string("first"), Value::boolean(k == 0));
          d.set(Value::string("last"), Value::boolean(k == n - 1));
          d.set(Value::string("length"), Value::integer(n));
          d.set(Value::string("depth"), Value::integer(1));
          d.set(Value::string("depth0"), Value::integer(0));
          if (k > 0) d.set(Value::string("previtem"), items[static_cast<size_t>(k - 1)]);
          if (k + 1 < n) d.set(Value::string("nextitem"), items[static_cast<size_t>(k + 1)]);
          d.set(Value::string("cycle"), Value::callable([k](Args& args, Kwargs&) {
                  if (args.empty()) fail("no items for cycling given");
                  return args[static_cast<size_t>(k) % args.size()];
                }));
          body.vars["loop"] = loop;
          if (exec(s.body, body, out) == Flow::Break) break;
        }
        if (n == 0 && !s.else_body.empty()) {
          Frame body{{}, &f};
          exec(s.else_body, body, out);
        }
        break;
      }
      case K::Set: {
        Value v = eval(*s.expr, f);
        if (!s.attr.empty()) {
          Value ns = lookup(f, s.targets[0]);
          if (ns.kind != Value::Kind::Namespace)
            fail("cannot assign attribute on non-namespace object");
          ns.dict->set(Value::string(s.attr), v);
        } else {
          unpack(f, s.targets, v);
        }
        break;
      }
      case K::FilterBlock: {
        // {% filter f(args)|g %}body{% endfilter %}: s.expr applies the chain to the body, read
        // as the variable kFilterBlockBody.
        std::string captured;
        exec(s.body, f, captured);
        Frame inner{{{std::string(kFilterBlockBody), Value::string(captured)}}, &f};
        out += to_str(eval(*s.expr, inner));
        break;
      }
      case K::SetBlock: {
        std::string captured;
        exec(s.body, f, captured);
        f.vars[s.targets[0]] = Value::string(captured);
        break;
      }
      case K::Macro: f.vars[s.name] = make_macro(s, root); break;
      case K::CallBlock: {
        // The call expression with caller= the body (a macro over the variables in scope).
        const Expr& call_expr = *s.expr;
        Value callee = eval(*call_expr.items[0], f);
        Args args;
        Kwargs kwargs;
        eval_args(call_expr, f, args, kwargs);
        auto scope = std::make_shared<Frame>();
        for (Frame* p = &f; p; p = p->parent)
          for (const auto& [k, v] : p->vars)
            scope->vars.emplace(k, v);  // inner frames first: they shadow outer ones
        kwargs.push_back({"caller", make_macro(s, scope.get(), scope)});
        out += to_str(call(callee, args, kwargs));
        break;
      }
      case K::Break: return Flow::Break;
      case K::Continue: return Flow::Continue;
      case K::Scope: return exec(s.body, f, out);
    }
  } catch (RenderError& err) {
    if (err.line == 0) err.line = s.line;
    throw;
  }
  return Flow::Normal;
}

std::string render(const Program& program, std::map<std::string, Value> vars) {
  Frame globals;
  std::map<std::string, Value> g;
  add_globals(g);
  for (auto& [k, v] : g)
    globals.vars[k] = v;
  Frame root{{}, &globals};
  for (auto& [k, v] : vars)
    root.vars[k] = std::move(v);
  Interp in;
  in.program = &program;
  in.root = &root;
  std::string out;
  in.exec(program.body, root, out);
  return out;
}

}  // namespace luminal::io::chat

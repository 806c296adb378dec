// Filters with the semantics of jinja2 3.1 (jinja2/filters.py). Attribute/item access is in
// access.cpp, the tests in jinja_tests.cpp, the str/dict methods in str_methods.cpp, tojson's
// encoder in json.cpp.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>

#include "luminal/io/chat/builtin_util.hpp"
#include "luminal/io/chat/interp.hpp"

namespace luminal::io::chat {

using K = Value::Kind;

namespace {

const std::set<std::string, std::less<>>& filter_names() {
  static const std::set<std::string, std::less<>> names{
      "abs",    "attr",   "capitalize", "count",      "d",        "default", "dictsort",
      "e",      "escape", "first",      "float",      "format",   "indent",  "int",
      "items",  "join",   "last",       "length",     "list",     "lower",   "map",
      "max",    "min",    "reject",     "rejectattr", "replace",  "reverse", "round",
      "safe",   "select", "selectattr", "sort",       "string",   "sum",     "title",
      "tojson", "trim",   "unique",     "upper",      "wordcount"};
  return names;
}

Value attribute_path(const Value& item, const Value& attribute) {
  if (attribute.kind != K::String) return get_item(item, attribute);
  Value cur = item;
  size_t start = 0;
  const std::string& path = attribute.s;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(),
                                               [](char c) { return c >= '0' && c <= '9'; });
    if (cur.is_undefined()) fail(cur.s);
    cur = get_item(cur, digits ? Value::integer(std::stoll(part)) : Value::string(part));
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

double round_half_even_digits(double x, int64_t digits) {
  if (digits == 0) return std::nearbyint(x);
  char buf[512];
  std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(std::clamp<int64_t>(digits, -300, 300)),
                x);
  return std::stod(buf);
}

List select_items(Interp& in, const Value& seq, Args& args, bool by_attr, bool keep_matches) {
  List out;
  size_t first_arg = 0;
  Value attribute;
  if (by_attr) {
    if (args.empty()) fail("Missing parameter for attribute name");
    attribute = args[0];
    first_arg = 1;
  }
  std::string test;
  Args test_args;
  if (args.size() > first_arg) {
    test = need_str(args[first_arg], "test name");
    test_args.assign(args.begin() + static_cast<std::ptrdiff_t>(first_arg) + 1, args.end());
    if (!is_test(test)) fail("No test named '" + test + "'.");
  }
  for (const auto& item : iterate(seq)) {
    Value probe = by_attr ? attribute_path(item, attribute) : item;
    bool ok = test.empty() ? probe.truthy() : apply_test(in, test, probe, test_args);
    if (ok == keep_matches) out.push_back(item);
  }
  return out;
}

Value sort_key(const Value& v, bool case_sensitive, const Value* attribute) {
  Value k = attribute && !attribute->is_none() ? attribute_path(v, *attribute) : v;
  if (!case_sensitive && k.kind == K::String) return Value::string(py_lower(k.s));
  return k;
}

// jinja2's sorted(..., reverse=...): stable, and equal items keep their order when reversed.
template <class Cmp>
Value stable_sorted(List items, bool reverse, const Cmp& cmp) {
  if (reverse) {
    std::stable_sort(items.begin(), items.end(),
                     [&](const Value& a, const Value& b) { return cmp(b, a); });
  } else {
    std::stable_sort(items.begin(), items.end(), cmp);
  }
  return Value::make_list(std::move(items));
}

}  // namespace

bool is_filter(std::string_view name) { return filter_names().count(name) > 0; }

Value apply_filter(Interp& in, const std::string& name, Value v, Args& args, Kwargs& kwargs) {
  if (name == "safe") {
    // markupsafe.Markup(v); with autoescape off it prints as the plain string.
    if (v.kind == K::String) {
      v.is_markup = true;
      return v;
    }
    return Value::markup(to_str(v));
  }
  if (name == "string") return v.kind == K::String ? v : Value::string(to_str(v));
  if (name == "format") return percent_format(v, args, kwargs);
  if (name == "tojson") {
    bool ensure_ascii = arg_or(args, kwargs, 0, "ensure_ascii", Value::boolean(false)).truthy();
    Value indent = arg_or(args, kwargs, 1, "indent", Value::none());
    Value seps = arg_or(args, kwargs, 2, "separators", Value::none());
    bool sort_keys = arg_or(args, kwargs, 3, "sort_keys", Value::boolean(false)).truthy();
    std::string item_sep = indent.is_none() ? ", " : ",", key_sep = ": ";
    if (!seps.is_none()) {
      List parts = iterate(seps);
      if (parts.size() != 2) fail("separators must be a pair of strings");
      item_sep = need_str(parts[0], "separator");
      key_sep = need_str(parts[1], "separator");
    }
    if (v.is_undefined()) fail("Object of type Undefined is not JSON serializable");
    if (v.is_generator) fail("Object of type generator is not JSON serializable");
    return Value::string(to_json(v, indent, item_sep, key_sep, sort_keys, ensure_ascii));
  }
  if (name == "default" || name == "d") {
    Value dflt = arg_or(args, kwargs, 0, "default_value", Value::string(""));
    bool boolean = arg_or(args, kwargs, 1, "boolean", Value::boolean(false)).truthy();
    if (v.is_undefined() || (boolean && !v.truthy())) return dflt;
    return v;
  }
  if (name == "length" || name == "count") {
    if (v.is_generator) fail("object of type 'generator' has no len()");
    switch (v.kind) {
      case K::Undefined: return Value::integer(0);
      case K::String: return Value::integer(static_cast<int64_t>(utf8_length(v.s)));
      case K::List: return Value::integer(static_cast<int64_t>(v.list->size()));
      case K::Dict:
      case K::Namespace: return Value::integer(static_cast<int64_t>(v.dict->items.size()));
      default: fail("object of type '" + std::string(v.type_name()) + "' has no len()");
    }
  }
  // Markup's str methods return Markup.
  auto keep_markup = [&](std::string out) {
    Value r = Value::string(std::move(out));
    r.is_markup = v.is_markup;
    return r;
  };
  if (name == "trim") {
    return keep_markup(py_strip(to_str(v), true, true, arg(args, kwargs, 0, "chars")));
  }
  if (name == "upper") return keep_markup(py_upper(to_str(v)));
  if (name == "lower") return keep_markup(py_lower(to_str(v)));
  if (name == "capitalize") return keep_markup(capitalize(to_str(v)));
  if (name == "title") return Value::string(jinja_title(to_str(v)));
  if (name == "replace") {
    const Value* a = arg(args, kwargs, 0, "old");
    const Value* b = arg(args, kwargs, 1, "new");
    if (!a || !b) fail("replace filter needs old and new");
    Value count = arg_or(args, kwargs, 2, "count", Value::none());
    return Value::string(
        replace_all(to_str(v), to_str(*a), to_str(*b), count.is_none() ? -1 : count.as_int()));
  }
  if (name == "escape" || name == "e") {
    if (v.is_markup) return v;
    return Value::markup(html_escape(to_str(v)));
  }
  if (name == "dictsort") {
    bool cs = arg_or(args, kwargs, 0, "case_sensitive", Value::boolean(false)).truthy();
    Value by = arg_or(args, kwargs, 1, "by", Value::string("key"));
    bool reverse = arg_or(args, kwargs, 2, "reverse", Value::boolean(false)).truthy();
    size_t pos = 0;
    if (by.kind == K::String && by.s == "key") {
      pos = 0;
    } else if (by.kind == K::String && by.s == "value") {
      pos = 1;
    } else {
      fail("You can only sort by either \"key\" or \"value\"");
    }
    if (v.kind != K::Dict) {
      if (v.is_undefined()) fail(v.s.empty() ? "'items' of undefined" : v.s);
      fail("'" + std::string(v.type_name()) + "' object has no attribute 'items'");
    }
    List items;
    for (const auto& [k, x] : v.dict->items)
      items.push_back(Value::tuple({k, x}));
    auto key = [&](const Value& item) {
      const Value& k = (*item.list)[pos];
      if (!cs && k.kind == K::String) return Value::string(py_lower(k.s));
      return k;
    };
    return stable_sorted(std::move(items), reverse,
                         [&](const Value& a, const Value& b) { return less(key(a), key(b)); });
  }
  if (name == "first" || name == "last") {
    List items = iterate(v);
    if (items.empty())
      return Value::undefined(std::string("No ") + name + " item, sequence was empty.");
    return name == "first" ? items.front() : items.back();
  }
  if (name == "list") return Value::make_list(iterate(v));
  if (name == "items") {
    if (v.is_undefined()) return Value::make_list();
    if (v.kind != K::Dict) fail("Can only get item pairs from a mapping.");
    List items;
    for (const auto& [k, x] : v.dict->items)
      items.push_back(Value::tuple({k, x}));
    return Value::make_list(std::move(items));
  }
  if (name == "join") {
    std::string sep = to_str(arg_or(args, kwargs, 0, "d", Value::string("")));
    const Value* attribute = arg(args, kwargs, 1, "attribute");
    std::string out;
    bool first = true;
    for (const auto& item : iterate(v)) {
      if (!first) out += sep;
      first = false;
      out += to_str(attribute && !attribute->is_none() ? attribute_path(item, *attribute) : item);
    }
    return Value::string(out);
  }
  if (name == "reverse") {
    if (v.kind == K::String) {
      auto chars = utf8_chars(v.s);
      std::string out;
      for (auto it = chars.rbegin(); it != chars.rend(); ++it)
        out += *it;
      return Value::string(out);
    }
    List items = iterate(v);
    std::reverse(items.begin(), items.end());
    return Value::make_list(std::move(items));
  }
  if (name == "abs") {
    if (v.kind == K::Float) return Value::floating(std::fabs(v.f));
    int64_t x = v.as_int();
    return Value::integer(x < 0 ? -x : x);
  }
  if (name == "int") {
    Value dflt = arg_or(args, kwargs, 0, "default", Value::integer(0));
    if (v.is_integral()) return Value::integer(v.as_int());
    if (v.kind == K::Float) {
      if (!std::isfinite(v.f)) return dflt;
      return Value::integer(static_cast<int64_t>(std::trunc(v.f)));
    }
    if (v.kind == K::String) {
      std::string s = py_strip(v.s, true, true);
      std::string digits = s;
      std::erase(digits, '_');
      try {
        size_t used = 0;
        int64_t x = std::stoll(digits, &used, 10);
        if (used == digits.size() && !s.empty() && s.front() != '_' && s.back() != '_')
          return Value::integer(x);
      } catch (...) {
      }
      try {
        size_t used = 0;
        double d = std::stod(s, &used);
        if (used == s.size() && std::isfinite(d))
          return Value::integer(static_cast<int64_t>(std::trunc(d)));
      } catch (...) {
      }
    }
    return dflt;
  }
  if (name == "float") {
    Value dflt = arg_or(args, kwargs, 0, "default", Value::floating(0.0));
    if (v.is_number()) return Value::floating(v.as_double());
    if (v.kind == K::String) {
      std::string s = py_strip(v.s, true, true);
      try {
        size_t used = 0;
        double d = std::stod(s, &used);
        if (used == s.size()) return Value::floating(d);
      } catch (...) {
      }
    }
    return dflt;
  }
  if (name == "round") {
    int64_t precision = arg_or(args, kwargs, 0, "precision", Value::integer(0)).as_int();
    std::string method = to_str(arg_or(args, kwargs, 1, "method", Value::string("common")));
    if (method != "common" && method != "ceil" && method != "floor")
      fail("method must be common, ceil or floor");
    if (method == "common") {
      if (v.is_integral()) return Value::integer(v.as_int());
      return Value::floating(round_half_even_digits(v.as_double(), precision));
    }
    double scale = std::pow(10.0, static_cast<double>(precision));
    double x = v.as_double() * scale;
    return Value::floating((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
  }
  if (name == "attr") {
    if (args.empty()) fail("attr filter needs a name");
    // Python getattr only: a dict's keys are not attributes.
    std::string attr = to_str(args[0]);
    if (v.kind == K::Dict) {
      Value m = method(v, attr);
      return m.is_undefined() ? Value::undefined("'dict object' has no attribute '" + attr + "'")
                              : m;
    }
    if (v.is_undefined()) fail(v.s);
    return get_attr(v, attr);
  }
  if (name == "map") {
    // jinja2's map is a generator, empty for none/undefined (`if value:`).
    if (!v.truthy()) return Value::generator({});
    List out;
    const Value* attribute = arg(args, kwargs, 99, "attribute");
    if (attribute) {
      const Value* dflt = arg(args, kwargs, 99, "default");
      for (const auto& item : iterate(v)) {
        Value x = attribute_path(item, *attribute);
        out.push_back(x.is_undefined() && dflt ? *dflt : x);
      }
      return Value::generator(std::move(out));
    }
    if (args.empty()) return Value::generator(iterate(v));
    std::string f = need_str(args[0], "filter name");
    if (!is_filter(f)) fail("No filter named '" + f + "'.");
    Args rest(args.begin() + 1, args.end());
    for (const auto& item : iterate(v)) {
      Args a = rest;
      Kwargs k = kwargs;
      out.push_back(apply_filter(in, f, item, a, k));
    }
    return Value::generator(std::move(out));
  }
  if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr") {
    // Generators, empty for none/undefined (`if value:`).
    if (!v.truthy()) return Value::generator({});
    bool by_attr = name == "selectattr" || name == "rejectattr";
    return Value::generator(
        select_items(in, v, args, by_attr, name == "select" || name == "selectattr"));
  }
  if (name == "sort" || name == "unique" || name == "min" || name == "max") {
    size_t base = name == "sort" ? 1 : 0;  // sort(reverse, case_sensitive, attribute)
    bool reverse =
        name == "sort" && arg_or(args, kwargs, 0, "reverse", Value::boolean(false)).truthy();
    bool cs = arg_or(args, kwargs, base, "case_sensitive", Value::boolean(false)).truthy();
    const Value* attribute = arg(args, kwargs, base + 1, "attribute");
    List items = iterate(v);
    if (name == "unique") {
      List out, seen;
      for (const auto& x : items) {
        Value k = sort_key(x, cs, attribute);
        bool dup = false;
        for (const auto& s : seen)
          dup = dup || equals(s, k);
        if (!dup) {
          seen.push_back(k);
          out.push_back(x);
        }
      }
      return Value::make_list(std::move(out));
    }
    auto cmp = [&](const Value& a, const Value& b) {
      return less(sort_key(a, cs, attribute), sort_key(b, cs, attribute));
    };
    if (name == "sort") return stable_sorted(std::move(items), reverse, cmp);
    if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    auto it = name == "min" ? std::min_element(items.begin(), items.end(), cmp)
                            : std::max_element(items.begin(), items.end(), cmp);
    if (name == "max") {
      // Python's max keeps the first of equal maxima.
      for (auto j = items.begin(); j != items.end(); ++j)
        if (!cmp(*j, *it) && !cmp(*it, *j)) {
          it = j;
          break;
        }
    }
    return *it;
  }
  if (name == "sum") {
    const Value* attribute = arg(args, kwargs, 0, "attribute");
    Value total = arg_or(args, kwargs, 1, "start", Value::integer(0));
    for (const auto& item : iterate(v)) {
      Value x = attribute && !attribute->is_none() ? attribute_path(item, *attribute) : item;
      if (!total.is_number() || !x.is_number())
        fail("unsupported operand type(s) for +: '" + std::string(total.type_name()) + "' and '" +
             std::string(x.type_name()) + "'");
      total = total.kind == K::Float || x.kind == K::Float
                  ? Value::floating(total.as_double() + x.as_double())
                  : Value::integer(total.as_int() + x.as_int());
    }
    return total;
  }
  if (name == "wordcount") {
    // jinja2 counts re.findall(r"\w+"); non-ASCII characters count as word characters
    // unless they are whitespace.
    int64_t words = 0;
    bool in_word = false;
    std::string text = to_str(v);
    for (auto ch : utf8_chars(text)) {
      auto c = static_cast<unsigned char>(ch[0]);
      bool w = c >= 0x80 ? is_word_char(ch) : (std::isalnum(c) || c == '_');
      if (w && !in_word) ++words;
      in_word = w;
    }
    return Value::integer(words);
  }
  if (name == "indent") {
    Value width = arg_or(args, kwargs, 0, "width", Value::integer(4));
    bool first = arg_or(args, kwargs, 1, "first", Value::boolean(false)).truthy();
    bool blank = arg_or(args, kwargs, 2, "blank", Value::boolean(false)).truthy();
    std::string ind =
        width.kind == K::String
            ? width.s
            : std::string(static_cast<size_t>(std::max<int64_t>(0, width.as_int())), ' ');
    std::string s = to_str(v) + "\n";
    std::vector<std::string> lines = split_lines(s);
    std::string rv;
    if (blank) {
      for (size_t k = 0; k < lines.size(); ++k)
        rv += (k ? "\n" + ind : "") + lines[k];
    } else {
      rv = lines.empty() ? "" : lines[0];
      for (size_t k = 1; k < lines.size(); ++k)
        rv += "\n" + (lines[k].empty() ? "" : ind + lines[k]);
    }
    return Value::string(first ? ind + rv : rv);
  }
  fail("No filter named '" + name + "' found.");
}

}  // namespace luminal::io::chat

// Attribute and item access (obj.name, obj[key]) and iteration with the semantics of jinja2 3.1's
// sandboxed environment.
#include <string>

#include "luminal/io/chat/builtin_util.hpp"
#include "luminal/io/chat/interp.hpp"

namespace luminal::io::chat {

using K = Value::Kind;

List iterate(const Value& v) {
  switch (v.kind) {
    case K::Undefined: return {};
    case K::List: return *v.list;
    case K::String: {
      List out;
      for (auto ch : utf8_chars(v.s))
        out.push_back(Value::string(std::string(ch)));
      return out;
    }
    case K::Dict: {
      List out;
      for (const auto& [k, x] : v.dict->items)
        out.push_back(k);
      return out;
    }
    default: fail("'" + std::string(v.type_name()) + "' object is not iterable");
  }
}

Value method(const Value& self, const std::string& name) {
  if (self.kind == K::String) return string_method(self, name);
  if (self.kind == K::Dict) return dict_method(self, name);
  return {};
}

Value get_attr(const Value& obj, const std::string& name) {
  switch (obj.kind) {
    case K::String: return string_method(obj, name);
    case K::Dict: {
      Value m = dict_method(obj, name);
      if (!m.is_undefined()) return m;
      if (const Value* v = obj.dict->find(name)) return *v;
      return Value::undefined("'dict object' has no attribute '" + name + "'");
    }
    case K::Namespace: {
      if (const Value* v = obj.dict->find(name)) return *v;
      return Value::undefined("'Namespace' object has no attribute '" + name + "'");
    }
    case K::None: return Value::undefined("'None' has no attribute '" + name + "'");
    default:
      return Value::undefined("'" + std::string(obj.type_name()) + " object' has no attribute '" +
                              name + "'");
  }
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_generator) return Value::undefined("'generator object' has no element " + repr(key));
  if ((obj.kind == K::List || obj.kind == K::String) && key.is_integral()) {
    int64_t idx = key.as_int();
    if (obj.kind == K::List) {
      auto n = static_cast<int64_t>(obj.list->size());
      if (idx < 0) idx += n;
      if (idx >= 0 && idx < n) return (*obj.list)[static_cast<size_t>(idx)];
    } else {
      auto chars = utf8_chars(obj.s);
      auto n = static_cast<int64_t>(chars.size());
      if (idx < 0) idx += n;
      if (idx >= 0 && idx < n) return Value::string(std::string(chars[static_cast<size_t>(idx)]));
    }
    return Value::undefined("'" + std::string(obj.type_name()) + " object' has no element " +
                            std::to_string(key.as_int()));
  }
  if (obj.kind == K::Dict || obj.kind == K::Namespace) {
    if (const Value* v = obj.dict->find(key)) return *v;
  }
  if (key.kind == K::String) return get_attr(obj, key.s);
  return Value::undefined("'" + std::string(obj.type_name()) + " object' has no element " +
                          repr(key));
}

}  // namespace luminal::io::chat

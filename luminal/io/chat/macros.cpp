// Macros and {% call %} blocks' callers, with the argument binding of jinja2's runtime.Macro.
#include <algorithm>
#include <optional>

#include "luminal/io/chat/interp.hpp"

namespace luminal::io::chat {

Value Interp::make_macro(const Stmt& m, Frame* scope, std::shared_ptr<Frame> keep) {
  const Stmt* mp = &m;
  return Value::callable([this, mp, scope, keep](Args& args, Kwargs& kwargs) {
    const Stmt& m = *mp;
    const size_t count = m.params.size();
    Kwargs rest = kwargs;
    auto take = [&](const std::string& name) -> std::optional<Value> {
      for (auto it = rest.begin(); it != rest.end(); ++it)
        if (it->name == name) {
          Value v = it->value;
          rest.erase(it);
          return v;
        }
      return std::nullopt;
    };
    Frame mf{{}, scope};
    // Positional arguments first; the parameters after them from keywords, else defaults.
    bool found_caller = false;
    for (size_t k = 0; k < count; ++k) {
      const std::string& p = m.params[k];
      if (k < args.size()) {
        mf.vars[p] = args[k];
        continue;
      }
      if (p == "caller") found_caller = true;
      if (std::optional<Value> v = take(p)) {
        mf.vars[p] = *v;
      } else if (m.defaults[k]) {
        mf.vars[p] = eval(*m.defaults[k], mf);
      } else {
        mf.vars[p] = Value::undefined("parameter '" + p + "' was not provided");
      }
    }
    if (args.size() >= count)
      found_caller = std::find(m.params.begin(), m.params.end(), "caller") != m.params.end();
    if (m.reads_caller && !found_caller) {
      std::optional<Value> c = take("caller");
      mf.vars["caller"] = c ? *c : Value::undefined("No caller defined");
    }
    if (m.reads_kwargs) {
      Value d = Value::make_dict();
      for (auto& kw : rest)
        d.dict->set(Value::string(kw.name), kw.value);
      mf.vars["kwargs"] = d;
    } else if (!rest.empty()) {
      for (const auto& kw : rest)
        if (kw.name == "caller")
          fail("macro '" + m.name +
               "' was invoked with two values for the special caller argument. This is most "
               "likely a bug.");
      fail("macro '" + m.name + "' takes no keyword argument '" + rest.front().name + "'");
    }
    if (m.reads_varargs) {
      List extra;
      for (size_t k = count; k < args.size(); ++k)
        extra.push_back(args[k]);
      mf.vars["varargs"] = Value::tuple(std::move(extra));
    } else if (args.size() > count) {
      fail("macro '" + m.name + "' takes not more than " + std::to_string(count) + " argument(s)");
    }
    if (depth > 64) fail("macro recursion is too deep");
    std::string text;
    ++depth;
    try {
      exec(m.body, mf, text);
    } catch (...) {
      --depth;
      throw;
    }
    --depth;
    return Value::string(text);
  });
}

}  // namespace luminal::io::chat

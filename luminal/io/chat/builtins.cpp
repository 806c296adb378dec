// Global functions of the template environment, as transformers sets it up: jinja2's range,
// namespace and dict, plus transformers' raise_exception and strftime_now.
#include <cstdlib>
#include <ctime>
#include <string>

#include "luminal/io/chat/interp.hpp"

namespace luminal::io::chat {

namespace {

// namespace() and dict(): `target` filled from mapping arguments, then keyword arguments.
Value fill_mapping(Value target, const Args& args, const Kwargs& kwargs, const char* who) {
  for (const auto& a : args) {
    if (a.kind != Value::Kind::Dict)
      fail(std::string(who) + " takes a mapping or keyword arguments");
    for (const auto& [k, v] : a.dict->items)
      target.dict->set(k, v);
  }
  for (const auto& kw : kwargs)
    target.dict->set(Value::string(kw.name), kw.value);
  return target;
}

}  // namespace

void add_globals(std::map<std::string, Value>& globals) {
  globals["range"] = Value::callable([](Args& args, Kwargs&) {
    if (args.empty() || args.size() > 3) fail("range expected 1 to 3 arguments");
    int64_t start = 0, stop = 0, step = 1;
    if (args.size() == 1) {
      stop = args[0].as_int();
    } else {
      start = args[0].as_int();
      stop = args[1].as_int();
      if (args.size() == 3) step = args[2].as_int();
    }
    if (step == 0) fail("range() arg 3 must not be zero");
    List items;
    for (int64_t k = start; step > 0 ? k < stop : k > stop; k += step) {
      if (items.size() >= 100000)
        fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
      items.push_back(Value::integer(k));
    }
    return Value::make_list(std::move(items));
  });
  globals["namespace"] = Value::callable([](Args& args, Kwargs& kwargs) {
    return fill_mapping(Value::make_namespace(), args, kwargs, "namespace()");
  });
  globals["dict"] = Value::callable([](Args& args, Kwargs& kwargs) {
    return fill_mapping(Value::make_dict(), args, kwargs, "dict()");
  });
  globals["raise_exception"] = Value::callable(
      [](Args& args, Kwargs&) -> Value { fail(args.empty() ? std::string() : to_str(args[0])); });
  globals["strftime_now"] = Value::callable([](Args& args, Kwargs&) {
    if (args.empty() || !args[0].is_string()) fail("strftime_now expects a format string");
    // SOURCE_DATE_EPOCH (reproducible builds' variable: seconds since 1970, read as UTC) fixes
    // the time, so a rendered prompt does not change with the day; otherwise local time now.
    std::tm tm{};
    const char* fixed = std::getenv("SOURCE_DATE_EPOCH");
    char* end = nullptr;
    const long long epoch = fixed ? std::strtoll(fixed, &end, 10) : 0;
    if (fixed && *fixed && end && *end == '\0') {
      const std::time_t t = static_cast<std::time_t>(epoch);
      gmtime_r(&t, &tm);
    } else {
      const std::time_t now = std::time(nullptr);
      localtime_r(&now, &tm);
    }
    char buf[256];
    size_t n = std::strftime(buf, sizeof buf, args[0].s.c_str(), &tm);
    return Value::string(std::string(buf, n));
  });
}

}  // namespace luminal::io::chat

#pragma once
// Pieces shared by the filters (filters.cpp), the str/dict methods (str_methods.cpp) and tojson
// (json.cpp) (internal).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "luminal/io/chat/interp.hpp"

namespace luminal::io::chat {

/// Positional-or-keyword argument `index`/`name` of a filter or method (after the value); null
/// when absent.
const Value* arg(const Args& args, const Kwargs& kwargs, size_t index, std::string_view name);
/// As arg(), with a default.
Value arg_or(const Args& args, const Kwargs& kwargs, size_t index, std::string_view name, Value d);
/// The string in `v`; fails ("<what> must be str, not <type>") otherwise.
std::string need_str(const Value& v, const char* what);

/// markupsafe.escape of a plain string.
std::string html_escape(const std::string& s);

/// Python's notion of a cased character / a \w character (approximate beyond ASCII).
bool is_cased(std::string_view ch);
bool is_word_char(std::string_view ch);
/// str.capitalize, and jinja2's title filter.
std::string capitalize(std::string_view s);
std::string jinja_title(std::string_view s);
/// str.splitlines(): lines split at \n, \r or \r\n, without the line breaks.
std::vector<std::string> split_lines(const std::string& s);
/// str.replace(old, new, count) (count < 0: all).
std::string replace_all(const std::string& s, const std::string& old, const std::string& repl,
                        int64_t count);

/// One replacement field of str.format: Python's format(value, spec) for str/int/bool/float (the
/// standard format-spec mini-language, without nested fields or the 'c'/'n' types).
std::string format_field(const Value& v, const std::string& spec);
/// Python's `fmt % args` (printf-style), or `fmt % kwargs` with %(name)s fields, as jinja2's
/// format filter calls it (percent_format.cpp).
Value percent_format(const Value& fmt, const Args& args, const Kwargs& kwargs);

/// The bound method `name` of a str / dict value (undefined or none when it has none).
Value string_method(const Value& self, const std::string& name);
Value dict_method(const Value& self, const std::string& name);

/// json.dumps of a value (tojson): `indent` null for none.
void json_encode(const Value& v, const std::string* indent, int level, const std::string& item_sep,
                 const std::string& key_sep, bool sort_keys, bool ensure_ascii, std::string& out);

}  // namespace luminal::io::chat

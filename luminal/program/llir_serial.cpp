#include "luminal/program/llir_serial.hpp"

#include <bit>
#include <charconv>
#include <cstdio>
#include <vector>

#include "luminal/core/error.hpp"
#include "luminal/core/expr_serial.hpp"

namespace luminal {

namespace {

// Labels may hold any character: escape the separators.
std::string escape(std::string_view s) {
  std::string o;
  for (char c : s) {
    if (c == '\\')
      o += "\\\\";
    else if (c == '\t')
      o += "\\t";
    else if (c == '\n')
      o += "\\n";
    else
      o += c;
  }
  return o;
}

std::string unescape(std::string_view s) {
  std::string o;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      o += s[i];
      continue;
    }
    const char n = s[++i];
    o += n == 't' ? '\t' : n == 'n' ? '\n' : n;
  }
  return o;
}

std::string exprs(const std::vector<Expr>& es) {
  std::string s;
  for (size_t i = 0; i < es.size(); ++i)
    s += (i ? ";" : "") + write_expr(es[i]);
  return s;
}

std::vector<Expr> read_exprs(std::string_view s) {
  std::vector<Expr> out;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t end = s.find(';', pos);
    if (end == std::string_view::npos) end = s.size();
    out.push_back(read_expr(s.substr(pos, end - pos)));
    pos = end + 1;
  }
  return out;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (true) {
    size_t end = s.find(sep, pos);
    if (end == std::string_view::npos) {
      out.push_back(s.substr(pos));
      return out;
    }
    out.push_back(s.substr(pos, end - pos));
    pos = end + 1;
  }
}

template <class T>
T number(std::string_view s, int base = 10) {
  T v{};
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || p != s.data() + s.size())
    throw Error("'" + std::string(s) + "' is not a number");
  return v;
}

constexpr int kFields = 14;

}  // namespace

std::string write_llir(const LlirGraph& g) {
  std::string out;
  char bits[32];
  for (const LlirNode& n : g.nodes) {
    const Attrs& a = n.attrs;
    out += n.op->name;
    out += '\t';
    for (size_t i = 0; i < n.inputs.size(); ++i)
      out += (i ? "," : "") + std::to_string(n.inputs[i]);
    out += '\t';
    out += name(a.dtype);
    out += '\t' + exprs(a.shape) + '\t';
    for (size_t i = 0; i < a.views.size(); ++i) {
      const View& v = a.views[i];
      out += (i ? "|" : "") + exprs(v.dims) + "#" + exprs(v.strides);
      if (v.has_base()) out += "@" + write_expr(v.base);  // dims#strides[@base]
    }
    out += '\t' + escape(a.label) + '\t' + (a.persist ? "1" : "0") + '\t';
    std::snprintf(bits, sizeof bits, "%llx",
                  static_cast<unsigned long long>(std::bit_cast<uint64_t>(a.value)));
    out += bits;
    out += '\t' + std::to_string(a.int_value) + '\t' + write_expr(a.iota_expr) + '\t' +
           write_expr(a.iota_len) + '\t' + std::to_string(a.axis) + '\t';
    if (a.payload) {
      out += std::string(a.payload->kind()) + '\t' + escape(a.payload->serialize());
    } else {
      out += "-\t";
    }
    out += '\n';
  }
  return out;
}

LlirGraph read_llir(std::string_view text, const Backend& backend) {
  LlirGraph g;
  size_t line_no = 0;
  for (std::string_view line : split(text, '\n')) {
    ++line_no;
    if (line.empty()) continue;
    try {
      std::vector<std::string_view> f = split(line, '\t');
      if (f.size() != kFields) {
        throw Error("expected " + std::to_string(kFields) + " fields, found " +
                    std::to_string(f.size()));
      }
      LlirNode n;
      n.op = backend.op_named(f[0]);
      if (!n.op) {
        throw Error("backend '" + backend.name() + "' has no op '" + std::string(f[0]) + "'");
      }
      if (!f[1].empty())
        for (std::string_view i : split(f[1], ','))
          n.inputs.push_back(number<int>(i));
      Attrs& a = n.attrs;
      a.dtype = parse_dtype(f[2]);
      a.shape = read_exprs(f[3]);
      if (!f[4].empty()) {
        for (std::string_view v : split(f[4], '|')) {
          const size_t hash = v.find('#');
          if (hash == std::string_view::npos) throw Error("a view without '#'");
          View view;
          view.dims = read_exprs(v.substr(0, hash));
          const size_t at = v.find('@', hash);
          view.strides = read_exprs(v.substr(
              hash + 1, at == std::string_view::npos ? std::string_view::npos : at - hash - 1));
          if (at != std::string_view::npos) view.base = read_expr(v.substr(at + 1));
          a.views.push_back(std::move(view));
        }
      }
      a.label = unescape(f[5]);
      a.persist = f[6] == "1";
      a.value = std::bit_cast<double>(number<uint64_t>(f[7], 16));
      a.int_value = number<int64_t>(f[8]);
      a.iota_expr = read_expr(f[9]);
      a.iota_len = read_expr(f[10]);
      a.axis = number<int>(f[11]);
      if (f[12] != "-") a.payload = backend.read_payload(f[12], unescape(f[13]));
      for (int in : n.inputs)
        if (in < 0 || in >= static_cast<int>(g.nodes.size()))
          throw Error("input %" + std::to_string(in) + " does not run before this node");
      g.nodes.push_back(std::move(n));
    } catch (const Error& e) {
      throw Error("read_llir: line " + std::to_string(line_no) + ": " + e.what());
    }
  }
  g.fill_input_dtypes();
  return g;
}

}  // namespace luminal

#include "luminal/egraph/attrs.hpp"

#include "luminal/core/expr_serial.hpp"
#include "luminal/core/hash.hpp"

#include <bit>
#include <cstdio>
#include <typeinfo>

namespace luminal {

namespace {

using luminal::hash_combine;
inline void combine(size_t& h, size_t v) { hash_combine(h, v); }

void hash_exprs(size_t& h, const std::vector<Expr>& es) {
  combine(h, es.size());
  for (const Expr& e : es)
    combine(h, e.hash());
}

bool same_bits(double a, double b) {
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

bool same_payload(const std::shared_ptr<const Payload>& a,
                  const std::shared_ptr<const Payload>& b) {
  if (a == b) return true;
  if (!a || !b) return false;
  if (typeid(*a) != typeid(*b) || a->kind() != b->kind()) return false;
  return a->equals(*b);
}

// Every field but `label`.
size_t hash_without_label(const Attrs& a) {
  size_t h = 0x51ed270b27cbd4f1ULL;
  combine(h, static_cast<size_t>(a.dtype));
  hash_exprs(h, a.shape);
  combine(h, a.views.size());
  for (const View& v : a.views) {
    hash_exprs(h, v.dims);
    hash_exprs(h, v.strides);
    combine(h, v.base.hash());
  }
  combine(h, a.persist ? 1 : 0);
  combine(h, std::bit_cast<uint64_t>(a.value));
  combine(h, static_cast<uint64_t>(a.int_value));
  combine(h, a.iota_expr.hash());
  combine(h, a.iota_len.hash());
  combine(h, static_cast<size_t>(static_cast<int64_t>(a.axis)));
  if (a.payload) {
    const Payload& p = *a.payload;
    combine(h, hash_string(p.kind()));
    combine(h, p.hash());
  } else {
    combine(h, 0);
  }
  return h;
}

}  // namespace

size_t Attrs::structural_hash() const { return hash_without_label(*this); }

size_t Attrs::hash() const {
  size_t h = hash_without_label(*this);
  combine(h, hash_string(label));
  return h;
}

bool Attrs::operator==(const Attrs& o) const { return label == o.label && equal_without_label(o); }

bool Attrs::equal_without_label(const Attrs& o) const {
  return dtype == o.dtype && shape == o.shape && views == o.views && persist == o.persist &&
         same_bits(value, o.value) && int_value == o.int_value && iota_expr == o.iota_expr &&
         iota_len == o.iota_len && axis == o.axis && same_payload(payload, o.payload);
}

std::string Attrs::key_text(bool with_label) const {
  std::string k(name(dtype));
  auto exprs = [&](const std::vector<Expr>& es) {
    k += "[";
    for (const Expr& e : es)
      k += write_expr(e) + ";";
    k += "]";
  };
  exprs(shape);
  for (const View& v : views) {
    k += "v";
    exprs(v.dims);
    exprs(v.strides);
    if (v.has_base()) k += "@" + write_expr(v.base) + ";";
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, " p%d v%llx i%lld a%d ", persist ? 1 : 0,
                static_cast<unsigned long long>(std::bit_cast<uint64_t>(value)),
                static_cast<long long>(int_value), axis);
  k += buf;
  k += write_expr(iota_expr) + " " + write_expr(iota_len);
  if (payload) k += " " + std::string(payload->kind()) + ":" + payload->serialize();
  if (with_label) k += " label=" + label;
  return k;
}

std::string Attrs::to_string() const {
  std::string s(name(dtype));
  s += shape_to_string(shape);
  if (!views.empty()) {
    s += " (";
    for (size_t i = 0; i < views.size(); ++i) {
      if (i) s += ", ";
      // Children are named a, b, c, ... (then c26, c27, ... past z).
      if (i < 26) {
        s += static_cast<char>('a' + i);
      } else {
        s += "c" + std::to_string(i);
      }
      s += ": ";
      s += shape_to_string(views[i].dims);
      s += " {";
      for (size_t k = 0; k < views[i].strides.size(); ++k) {
        if (k) s += ", ";
        s += views[i].strides[k].to_string();
      }
      s += "}";
      if (views[i].has_base()) s += " +" + views[i].base.to_string();
    }
    s += ")";
  }
  if (!label.empty()) s += " label=\"" + label + "\"";
  if (persist) s += " persist";
  if (!same_bits(value, 0.0)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", value);
    s += " value=";
    s += buf;
  }
  if (int_value != 0) s += " int_value=" + std::to_string(int_value);
  if (iota_expr != Expr() || iota_len != Expr()) {
    s += " iota=" + iota_expr.to_string() + " len=" + iota_len.to_string();
  }
  if (axis != 0) s += " axis=" + std::to_string(axis);
  if (payload) s += " " + payload->to_string();
  return s;
}

}  // namespace luminal

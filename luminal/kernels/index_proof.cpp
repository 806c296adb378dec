// The index proof (see index_proof.hpp).
#include "luminal/kernels/index_proof.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "luminal/core/error.hpp"
#include "luminal/core/expr_static.hpp"
#include "luminal/egraph/op_def.hpp"

namespace luminal {

namespace {

/// A class's values at each of its elements: f + U, U one unknown value at every element (when
/// `unknown`). f wraps as the graph's integers do (computed modulo 2^64, compared modulo 2^w).
struct Values {
  std::vector<uint64_t> f;
  bool unknown = false;
};

std::optional<int64_t> static_value(const Expr& e) {
  if (!is_static(e)) return std::nullopt;
  try {
    return e.eval({});
  } catch (const Error&) {
    return std::nullopt;
  }
}

std::optional<int64_t> static_numel(const Shape& s) {
  int64_t n = 1;
  for (const Expr& d : s) {
    std::optional<int64_t> v = static_value(d);
    if (!v || *v < 0 || (*v > 0 && n > kIndexProofMaxElements / *v)) return std::nullopt;
    n *= *v;
  }
  return n;
}

class Prover {
 public:
  explicit Prover(const EGraph& eg) : eg_(eg) {}

  /// `c`'s values read through `v` at each element of v.dims (row-major).
  std::optional<Values> read(ClassId c, const View& v) {
    std::optional<int64_t> n = static_numel(v.dims);
    if (!n || v.strides.size() != v.dims.size()) return std::nullopt;
    // Per axis, the offset each index adds; the base.
    std::vector<std::vector<int64_t>> table(v.dims.size());
    bool uniform = true;
    for (size_t k = 0; k < v.dims.size(); ++k) {
      const int64_t d = *static_value(v.dims[k]);
      if (!is_static(v.strides[k])) return std::nullopt;
      table[k].resize(static_cast<size_t>(d));
      for (int64_t i = 0; i < d; ++i) {
        try {
          table[k][i] = v.strides[k].eval({}, i);
        } catch (const Error&) {
          return std::nullopt;
        }
        uniform = uniform && table[k][i] == table[k][0];
      }
    }
    std::optional<int64_t> base = static_value(v.base);
    if (!base) return std::nullopt;
    std::optional<Values> src = values(c);
    if (!src) {
      // A value the proof cannot know, the same at every element read: the unknown part.
      if (!uniform) return std::nullopt;
      return Values{std::vector<uint64_t>(static_cast<size_t>(*n), 0), true};
    }
    Values out;
    out.unknown = src->unknown;
    out.f.resize(static_cast<size_t>(*n));
    std::vector<int64_t> idx(v.dims.size(), 0);
    for (int64_t e = 0; e < *n; ++e) {
      int64_t off = *base;
      for (size_t k = 0; k < idx.size(); ++k)
        off += table[k][idx[k]];
      if (off < 0 || off >= static_cast<int64_t>(src->f.size())) return std::nullopt;
      out.f[e] = src->f[off];
      for (size_t k = idx.size(); k-- > 0;) {
        if (++idx[k] < static_cast<int64_t>(table[k].size())) break;
        idx[k] = 0;
      }
    }
    return out;
  }

 private:
  /// The values of class c at each of its elements (row-major), if an HLIR e-node of c gives them.
  std::optional<Values> values(ClassId c) {
    c = eg_.find(c);
    if (auto it = memo_.find(c); it != memo_.end()) return it->second;
    if (busy_.count(c)) return std::nullopt;  // a cycle through c: no proof along it
    busy_.insert(c);
    std::optional<Values> r;
    const DType t = eg_.dtype(c);
    std::optional<int64_t> n = static_numel(eg_.shape(c));
    if (is_integer(t) && n && budget_ >= *n) {
      budget_ -= *n;
      for (ENodeId id : eg_.nodes_of(c)) {
        r = of_node(id, t, *n);
        if (r) break;
      }
    }
    busy_.erase(c);
    memo_[c] = r;
    return r;
  }

  std::optional<Values> of_node(ENodeId id, DType t, int64_t n) {
    const ENode& e = eg_.node(id);
    if (!e.op->is_hlir) return std::nullopt;
    const Attrs& a = eg_.attrs(e.attr);
    const size_t count = static_cast<size_t>(n);
    if (is_op(e.op, OpKind::Constant)) {
      return Values{std::vector<uint64_t>(count, static_cast<uint64_t>(a.int_value)), false};
    }
    if (is_op(e.op, OpKind::Iota)) {
      Values v;
      v.f.resize(count);
      for (int64_t i = 0; i < n; ++i) {
        int64_t x = 0;
        try {
          x = a.iota_expr.eval({}, i);
        } catch (const Error&) {
          return std::nullopt;
        }
        if (!in_range(t, static_cast<double>(x)))
          return std::nullopt;  // an Iota is I32: its values wrap past 2^31
        v.f[i] = static_cast<uint64_t>(x);
      }
      return v;
    }
    if (a.views.size() != e.children.size()) return std::nullopt;
    if (is_op(e.op, OpKind::Cast)) {
      const DType from = eg_.dtype(e.children[0]);
      if (!is_integer(from)) return std::nullopt;
      std::optional<Values> x = read(e.children[0], a.views[0]);
      if (!x) return std::nullopt;
      if (x->unknown) {
        // Between types of one width a cast is a bijection of the bits (only then does the
        // unknown part stay one value added to all).
        return bit_width(from) == bit_width(t) ? x : std::nullopt;
      }
      for (uint64_t& f : x->f) {
        const int64_t s = sign_extend(f, from);
        if (!in_range(t, static_cast<double>(s))) return std::nullopt;
        f = static_cast<uint64_t>(s);
      }
      return x;
    }
    if (!is_op(e.op, OpKind::Add) && !is_op(e.op, OpKind::Mul)) return std::nullopt;
    std::optional<Values> x = read(e.children[0], a.views[0]);
    if (!x) return std::nullopt;
    std::optional<Values> y = read(e.children[1], a.views[1]);
    if (!y || x->f.size() != count || y->f.size() != count) return std::nullopt;
    Values out;
    out.f.resize(count);
    if (is_op(e.op, OpKind::Add)) {
      out.unknown = x->unknown || y->unknown;
      for (size_t i = 0; i < count; ++i)
        out.f[i] = x->f[i] + y->f[i];
      return out;
    }
    // Mul: (f + U) * c = f * c + U * c when c is known and one value; otherwise both known.
    auto constant = [](const Values& v) {
      return !v.unknown &&
             std::all_of(v.f.begin(), v.f.end(), [&](uint64_t f) { return f == v.f[0]; });
    };
    if ((x->unknown || y->unknown) && !constant(*x) && !constant(*y)) return std::nullopt;
    out.unknown = x->unknown || y->unknown;
    for (size_t i = 0; i < count; ++i)
      out.f[i] = x->f[i] * y->f[i];
    return out;
  }

  /// f's low bit_width(t) bits as a signed (or unsigned) value of t.
  static int64_t sign_extend(uint64_t f, DType t) {
    const int w = bit_width(t);
    if (w >= 64) return static_cast<int64_t>(f);
    const uint64_t mask = (uint64_t{1} << w) - 1;
    f &= mask;
    if (is_signed(t) && (f >> (w - 1)) & 1) return static_cast<int64_t>(f | ~mask);
    return static_cast<int64_t>(f);
  }

  const EGraph& eg_;
  std::unordered_map<ClassId, std::optional<Values>> memo_;
  std::set<ClassId> busy_;
  int64_t budget_ = 8 * kIndexProofMaxElements;  // elements evaluated over all classes
};

}  // namespace

bool distinct_index(const EGraph& eg, ClassId c, const View& view) {
  const DType t = eg.dtype(c);
  if (!is_integer(t)) return false;
  Prover p(eg);
  std::optional<Values> v = p.read(c, view);
  if (!v) return false;
  const int w = bit_width(t);
  const uint64_t mask = w >= 64 ? ~uint64_t{0} : (uint64_t{1} << w) - 1;
  std::vector<uint64_t> f = std::move(v->f);
  for (uint64_t& x : f)
    x &= mask;
  std::sort(f.begin(), f.end());
  return std::adjacent_find(f.begin(), f.end()) == f.end();
}

}  // namespace luminal

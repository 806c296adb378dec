// Expr: interning, structural order, polynomial normal form (+, -, *), accessors, vars,
// substitute and as_linear. Div/Mod/Min/Max/comparisons, bounds and simplify live in
// expr_simplify.cpp; eval in expr_eval.cpp; printing in expr_print.cpp.
#include "luminal/core/expr.hpp"
#include "luminal/core/hash.hpp"

#include <algorithm>
#include <array>
#include <mutex>
#include <unordered_set>

#include "luminal/core/error.hpp"
#include "luminal/core/expr_node.hpp"

namespace luminal {
namespace expr_detail {

// ---------------------------------------------------------------------------------------------
// Checked arithmetic.

void throw_overflow(const char* op, int64_t a, int64_t b) {
  throw Overflow(std::string("integer overflow in expression arithmetic: ") + op + " of " +
                 std::to_string(a) + " and " + std::to_string(b) +
                 " does not fit in a signed 64-bit integer");
}

int64_t checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw_overflow("addition", a, b);
  return r;
}
int64_t checked_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) throw_overflow("subtraction", a, b);
  return r;
}
int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw_overflow("multiplication", a, b);
  return r;
}
int64_t floor_div(int64_t a, int64_t b) {
  if (b == -1) return -a;  // caller excludes INT64_MIN / -1
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t floor_mod(int64_t a, int64_t b) {
  if (b == -1 || b == 1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
int64_t ceil_div_pos(int64_t a, int64_t b) {
  int64_t q = a / b;
  if (a % b != 0 && a > 0) ++q;
  return q;
}

// ---------------------------------------------------------------------------------------------
// Interning.

namespace {

size_t mix(size_t h, size_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

size_t compute_hash(const ExprNode& n) {
  size_t h = (static_cast<size_t>(n.kind) + 1) * 0x100000001b3ULL;
  // Stable in every process and build (the compile cache keys on it): no std::hash.
  h = mix(h, static_cast<size_t>(hash_mix(static_cast<uint64_t>(n.value))));
  if (!n.name.empty()) h = mix(h, static_cast<size_t>(hash_string(n.name)));
  for (Node c : n.children)
    h = mix(h, c->hash);
  return h;
}

struct NodeHash {
  size_t operator()(Node n) const { return n->hash; }
};
struct NodeEq {
  bool operator()(Node a, Node b) const {
    return a->kind == b->kind && a->value == b->value && a->name == b->name &&
           a->children == b->children;
  }
};
struct Table {
  std::mutex mu;
  std::unordered_set<Node, NodeHash, NodeEq> set;
};
// Heap-allocated and never destroyed: nodes must outlive every static Expr.
Table& table() {
  static Table* t = new Table;
  return *t;
}

Node intern_node(ExprNode&& tmp) {
  tmp.hash = compute_hash(tmp);
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.set.find(&tmp);
  if (it != t.set.end()) return *it;
  if (tmp.kind == Kind::Const) {
    tmp.ubounds = {tmp.value, tmp.value};
  } else if (tmp.kind != Kind::Var) {
    std::vector<Interval> kids;
    kids.reserve(tmp.children.size());
    for (Node c : tmp.children)
      kids.push_back(c->ubounds);
    tmp.ubounds = local_bounds(&tmp, kids.data());
  }
  auto* n = new ExprNode(std::move(tmp));
  t.set.insert(n);
  return n;
}

constexpr int64_t kCacheLo = -64, kCacheHi = 1024;

}  // namespace

Node intern_const(int64_t v) {
  static const auto* cache = [] {
    auto* c = new std::array<Node, kCacheHi - kCacheLo + 1>();
    for (int64_t i = kCacheLo; i <= kCacheHi; ++i) {
      ExprNode tmp;
      tmp.kind = Kind::Const;
      tmp.value = i;
      (*c)[i - kCacheLo] = intern_node(std::move(tmp));
    }
    return c;
  }();
  if (v >= kCacheLo && v <= kCacheHi) return (*cache)[v - kCacheLo];
  ExprNode tmp;
  tmp.kind = Kind::Const;
  tmp.value = v;
  return intern_node(std::move(tmp));
}

Node intern_var(std::string_view name) {
  ExprNode tmp;
  tmp.kind = Kind::Var;
  tmp.name = std::string(name);
  return intern_node(std::move(tmp));
}

Node intern(Kind kind, std::vector<Node> children) {
  ExprNode tmp;
  tmp.kind = kind;
  tmp.children = std::move(children);
  return intern_node(std::move(tmp));
}

int compare(Node a, Node b) {
  if (a == b) return 0;
  if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
  if (a->kind == Kind::Const) return a->value < b->value ? -1 : (a->value > b->value ? 1 : 0);
  if (a->kind == Kind::Var) {
    int c = a->name.compare(b->name);
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  size_t n = std::min(a->children.size(), b->children.size());
  for (size_t i = 0; i < n; ++i) {
    int c = compare(a->children[i], b->children[i]);
    if (c != 0) return c;
  }
  if (a->children.size() != b->children.size())
    return a->children.size() < b->children.size() ? -1 : 1;
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Polynomials.

int compare_atoms(const std::vector<Node>& a, const std::vector<Node>& b) {
  size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    int c = compare(a[i], b[i]);
    if (c != 0) return c;
  }
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  return 0;
}

namespace {
Term term_of(Node n) {
  Term t;
  if (n->kind == Kind::Mul) {
    size_t i = 0;
    t.coef = 1;
    if (is_const(n->children[0])) {
      t.coef = n->children[0]->value;
      i = 1;
    }
    t.atoms.assign(n->children.begin() + static_cast<std::ptrdiff_t>(i), n->children.end());
  } else {
    t.coef = 1;
    t.atoms = {n};
  }
  return t;
}

Node term_node(const Term& t) {
  if (t.coef == 1 && t.atoms.size() == 1) return t.atoms[0];
  std::vector<Node> kids;
  kids.reserve(t.atoms.size() + 1);
  if (t.coef != 1) kids.push_back(intern_const(t.coef));
  kids.insert(kids.end(), t.atoms.begin(), t.atoms.end());
  return intern(Kind::Mul, std::move(kids));
}
}  // namespace

Poly to_poly(Node n) {
  Poly p;
  switch (n->kind) {
    case Kind::Const: p.constant = n->value; break;
    case Kind::Add:
      p.terms.reserve(n->children.size());
      for (Node c : n->children) {
        if (is_const(c))
          p.constant = c->value;
        else
          p.terms.push_back(term_of(c));
      }
      break;
    default: p.terms.push_back(term_of(n));
  }
  return p;
}

Node from_poly(const Poly& p) {
  std::vector<Node> kids;
  kids.reserve(p.terms.size() + 1);
  for (const Term& t : p.terms)
    kids.push_back(term_node(t));
  if (p.constant != 0 || kids.empty()) kids.push_back(intern_const(p.constant));
  if (kids.size() == 1) return kids[0];
  return intern(Kind::Add, std::move(kids));
}

void normalize(Poly& p) {
  std::sort(p.terms.begin(), p.terms.end(),
            [](const Term& a, const Term& b) { return compare_atoms(a.atoms, b.atoms) < 0; });
  size_t out = 0;
  for (size_t i = 0; i < p.terms.size();) {
    Term t = std::move(p.terms[i]);
    size_t j = i + 1;
    while (j < p.terms.size() && compare_atoms(p.terms[j].atoms, t.atoms) == 0) {
      t.coef = checked_add(t.coef, p.terms[j].coef);
      ++j;
    }
    if (t.coef != 0) p.terms[out++] = std::move(t);
    i = j;
  }
  p.terms.resize(out);
}

Poly poly_combine(const Poly& a, const Poly& b, bool subtract) {
  Poly r;
  r.terms.reserve(a.terms.size() + b.terms.size());
  r.constant = subtract ? checked_sub(a.constant, b.constant) : checked_add(a.constant, b.constant);
  size_t i = 0, j = 0;
  while (i < a.terms.size() || j < b.terms.size()) {
    int c = i == a.terms.size()   ? 1
            : j == b.terms.size() ? -1
                                  : compare_atoms(a.terms[i].atoms, b.terms[j].atoms);
    if (c < 0) {
      r.terms.push_back(a.terms[i++]);
    } else if (c > 0) {
      Term t = b.terms[j++];
      if (subtract) t.coef = checked_sub(0, t.coef);
      r.terms.push_back(std::move(t));
    } else {
      int64_t k = subtract ? checked_sub(a.terms[i].coef, b.terms[j].coef)
                           : checked_add(a.terms[i].coef, b.terms[j].coef);
      if (k != 0) r.terms.push_back({k, a.terms[i].atoms});
      ++i;
      ++j;
    }
  }
  return r;
}

Poly poly_mul(const Poly& a, const Poly& b) {
  Poly r;
  r.constant = checked_mul(a.constant, b.constant);
  r.terms.reserve(a.terms.size() * b.terms.size() + a.terms.size() + b.terms.size());
  for (const Term& ta : a.terms) {
    if (b.constant != 0) r.terms.push_back({checked_mul(ta.coef, b.constant), ta.atoms});
    for (const Term& tb : b.terms) {
      Term t;
      t.coef = checked_mul(ta.coef, tb.coef);
      t.atoms.reserve(ta.atoms.size() + tb.atoms.size());
      std::merge(ta.atoms.begin(), ta.atoms.end(), tb.atoms.begin(), tb.atoms.end(),
                 std::back_inserter(t.atoms), node_less);
      r.terms.push_back(std::move(t));
    }
  }
  if (a.constant != 0) {
    for (const Term& tb : b.terms)
      r.terms.push_back({checked_mul(a.constant, tb.coef), tb.atoms});
  }
  normalize(r);
  return r;
}

Node add(Node a, Node b) {
  if (is_const(a) && is_const(b)) return intern_const(checked_add(a->value, b->value));
  if (is_const(a) && a->value == 0) return b;
  if (is_const(b) && b->value == 0) return a;
  return from_poly(poly_combine(to_poly(a), to_poly(b), false));
}

Node sub(Node a, Node b) {
  if (is_const(a) && is_const(b)) return intern_const(checked_sub(a->value, b->value));
  if (is_const(b) && b->value == 0) return a;
  if (a == b) return intern_const(0);
  return from_poly(poly_combine(to_poly(a), to_poly(b), true));
}

Node neg(Node a) { return sub(intern_const(0), a); }

Node mul(Node a, Node b) {
  if (is_const(a) && is_const(b)) return intern_const(checked_mul(a->value, b->value));
  if (is_const(a) && a->value == 1) return b;
  if (is_const(b) && b->value == 1) return a;
  if ((is_const(a) && a->value == 0) || (is_const(b) && b->value == 0)) return intern_const(0);
  return from_poly(poly_mul(to_poly(a), to_poly(b)));
}

Node rebuild(Node orig, const std::vector<Node>& kids, BoundsCtx* ctx) {
  switch (orig->kind) {
    case Kind::Const:
    case Kind::Var: return orig;
    case Kind::Add: {
      Poly p;
      for (Node k : kids) {
        Poly q = to_poly(k);
        p.constant = checked_add(p.constant, q.constant);
        for (Term& t : q.terms)
          p.terms.push_back(std::move(t));
      }
      normalize(p);
      return from_poly(p);
    }
    case Kind::Mul: {
      Node r = kids[0];
      for (size_t i = 1; i < kids.size(); ++i)
        r = mul(r, kids[i]);
      return r;
    }
    case Kind::Div: return make_div(kids[0], kids[1], ctx);
    case Kind::Mod: return make_mod(kids[0], kids[1], ctx);
    case Kind::Min:
    case Kind::Max: return make_minmax(orig->kind, kids[0], kids[1], ctx);
    case Kind::Lt: return make_lt(kids[0], kids[1], ctx);
    case Kind::Le: return make_le(kids[0], kids[1], ctx);
    case Kind::Eq:
    case Kind::Ne: return make_eq(orig->kind, kids[0], kids[1], ctx);
    case Kind::And:
    case Kind::Or: return make_logic(orig->kind, kids[0], kids[1]);
  }
  internal_error(__FILE__, __LINE__, "unknown expression kind");
}

}  // namespace expr_detail

// ---------------------------------------------------------------------------------------------
// Public API.

using namespace expr_detail;  // NOLINT(google-build-using-namespace)

namespace {
bool is_identifier(std::string_view s) {
  if (s.empty()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s[0])) return false;
  for (char c : s) {
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  }
  return true;
}

Expr wrap(Node n) { return ExprBuilder::wrap(n); }

void collect_vars(Node n, std::unordered_set<Node>& seen, std::vector<std::string>& out) {
  if (n->kind == Kind::Const || !seen.insert(n).second) return;
  if (n->kind == Kind::Var) {
    out.push_back(n->name);
    return;
  }
  for (Node c : n->children)
    collect_vars(c, seen, out);
}

bool mentions(Node n, Node v, std::unordered_map<Node, bool>& memo) {
  if (n == v) return true;
  if (n->children.empty()) return false;
  auto it = memo.find(n);
  if (it != memo.end()) return it->second;
  bool r = false;
  for (Node c : n->children) {
    if (mentions(c, v, memo)) {
      r = true;
      break;
    }
  }
  memo.emplace(n, r);
  return r;
}

template <typename Lookup>
Node substitute_rec(Node n, const Lookup& lookup, std::unordered_map<Node, Node>& memo) {
  if (n->kind == Kind::Const) return n;
  if (n->kind == Kind::Var) {
    Node r = lookup(n->name);
    return r ? r : n;
  }
  auto it = memo.find(n);
  if (it != memo.end()) return it->second;
  std::vector<Node> kids;
  kids.reserve(n->children.size());
  bool changed = false;
  for (Node c : n->children) {
    kids.push_back(substitute_rec(c, lookup, memo));
    changed |= kids.back() != c;
  }
  Node r = changed ? rebuild(n, kids, nullptr) : n;
  memo.emplace(n, r);
  return r;
}
}  // namespace

Expr::Expr() : node_(intern_const(0)) {}
Expr::Expr(int64_t value) : node_(intern_const(value)) {}

int64_t Expr::from_unsigned(unsigned long long v) {
  if (v > static_cast<unsigned long long>(INT64_MAX)) {
    throw Error("integer constant " + std::to_string(v) +
                " does not fit in a signed 64-bit expression constant");
  }
  return static_cast<int64_t>(v);
}

Expr Expr::var(std::string_view name) {
  if (!is_identifier(name)) {
    throw Error("invalid variable name '" + std::string(name) +
                "': a dynamic dimension name must be an identifier ([A-Za-z_][A-Za-z0-9_]*)");
  }
  return Expr(intern_var(name));
}

Expr Expr::z() {
  static const ExprNode* z = intern_var("z");
  return Expr(z);
}

Expr::Kind Expr::kind() const { return node_->kind; }

int64_t Expr::as_const() const {
  if (node_->kind != Kind::Const)
    throw Error("as_const() called on the non-constant expression '" + to_string() + "'");
  return node_->value;
}

const std::string& Expr::var_name() const {
  if (node_->kind != Kind::Var)
    throw Error("var_name() called on the expression '" + to_string() +
                "', which is not a variable");
  return node_->name;
}

std::vector<Expr> Expr::children() const {
  std::vector<Expr> out;
  out.reserve(node_->children.size());
  for (Node c : node_->children)
    out.push_back(Expr(c));
  return out;
}

std::vector<std::string> Expr::vars() const {
  std::unordered_set<Node> seen;
  std::vector<std::string> out;
  collect_vars(node_, seen, out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool Expr::has_var(std::string_view name) const {
  if (!is_identifier(name)) return false;
  std::unordered_map<Node, bool> memo;
  return mentions(node_, intern_var(name), memo);
}

Expr Expr::substitute(std::string_view name, const Expr& with) const {
  std::unordered_map<Node, Node> memo;
  return Expr(substitute_rec(
      node_, [&](const std::string& n) -> Node { return n == name ? with.node_ : nullptr; }, memo));
}

Expr Expr::substitute(const std::map<std::string, Expr, std::less<>>& with) const {
  if (with.empty()) return *this;
  std::unordered_map<Node, Node> memo;
  return Expr(substitute_rec(
      node_,
      [&](const std::string& n) -> Node {
        auto it = with.find(n);
        return it == with.end() ? nullptr : it->second.node_;
      },
      memo));
}

std::optional<std::pair<Expr, Expr>> Expr::as_linear(std::string_view v) const {
  if (!is_identifier(v)) return std::pair<Expr, Expr>{Expr(0), *this};
  Node var = intern_var(v);
  std::unordered_map<Node, bool> memo;
  Poly p = to_poly(node_);
  Poly a, b;
  b.constant = p.constant;
  for (const Term& t : p.terms) {
    int count = 0;
    Term rest;
    rest.coef = t.coef;
    for (Node at : t.atoms) {
      if (at == var) {
        ++count;
      } else {
        if (mentions(at, var, memo)) return std::nullopt;
        rest.atoms.push_back(at);
      }
    }
    if (count > 1) return std::nullopt;
    if (count == 0) {
      b.terms.push_back(std::move(rest));
    } else if (rest.atoms.empty()) {
      a.constant = checked_add(a.constant, rest.coef);
    } else {
      a.terms.push_back(std::move(rest));
    }
  }
  normalize(a);
  normalize(b);
  return std::pair<Expr, Expr>{Expr(from_poly(a)), Expr(from_poly(b))};
}

bool Expr::operator<(const Expr& o) const { return compare(node_, o.node_) < 0; }
size_t Expr::hash() const { return node_->hash; }

Expr operator+(const Expr& a, const Expr& b) { return wrap(add(a.node(), b.node())); }
Expr operator-(const Expr& a, const Expr& b) { return wrap(sub(a.node(), b.node())); }
Expr operator-(const Expr& a) { return wrap(neg(a.node())); }
Expr operator*(const Expr& a, const Expr& b) { return wrap(mul(a.node(), b.node())); }
Expr operator/(const Expr& a, const Expr& b) { return wrap(make_div(a.node(), b.node(), nullptr)); }
Expr operator%(const Expr& a, const Expr& b) { return wrap(make_mod(a.node(), b.node(), nullptr)); }

Expr ceil_div(const Expr& a, const Expr& b) { return -((-a) / b); }
Expr min(const Expr& a, const Expr& b) {
  return wrap(make_minmax(Kind::Min, a.node(), b.node(), nullptr));
}
Expr max(const Expr& a, const Expr& b) {
  return wrap(make_minmax(Kind::Max, a.node(), b.node(), nullptr));
}
Expr lt(const Expr& a, const Expr& b) { return wrap(make_lt(a.node(), b.node(), nullptr)); }
Expr le(const Expr& a, const Expr& b) { return wrap(make_le(a.node(), b.node(), nullptr)); }
Expr gt(const Expr& a, const Expr& b) { return lt(b, a); }
Expr ge(const Expr& a, const Expr& b) { return le(b, a); }
Expr eq(const Expr& a, const Expr& b) {
  return wrap(make_eq(Kind::Eq, a.node(), b.node(), nullptr));
}
Expr ne(const Expr& a, const Expr& b) {
  return wrap(make_eq(Kind::Ne, a.node(), b.node(), nullptr));
}
Expr logical_and(const Expr& a, const Expr& b) {
  return wrap(make_logic(Kind::And, a.node(), b.node()));
}
Expr logical_or(const Expr& a, const Expr& b) {
  return wrap(make_logic(Kind::Or, a.node(), b.node()));
}

std::ostream& operator<<(std::ostream& os, const Expr& e) { return os << e.to_string(); }

}  // namespace luminal

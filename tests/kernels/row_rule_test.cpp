// The row rule (luminal/kernels/row_rule.hpp) on the host: the programs it builds mean what the
// graph means, without a GPU.
//
// A test backend has the fusion rules and the row rules over its own ops (test.Fused, test.Row,
// in separate rulesets in that order, as the CUDA backend has them) and runs nothing. For
// softmax, log-softmax, RMSNorm, layer norm, masked softmax (rows fully masked with -inf, rows
// partly masked) and RMSNorm of a residual sum, over [1, L], [3, L], [s, L] (s dynamic, run at 1
// and 3), [2, 3, L] and [s, c] (a dynamic row length, run at c = L) with L in {1, 31, 33, 1000},
// in f32 and bf16, the fewest-kernels program (one row kernel) and random programs of the search
// space run on a small LLIR interpreter here and are compared with the ReferenceRuntime.
//
// The interpreter runs HLIR nodes with the reference's own kernels and the two test ops with the
// semantics luminal/cuda/row.cpp implements: every instruction rounds to its dtype as the
// reference rounds the HLIR op; RowSum accumulates in double (in one fixed order of 32 lanes:
// the kernels' orders differ, the tolerance covers it) and rounds once; RowMax propagates NaN;
// loads read child k through views[k] at the flat output index (and view_over, which the CUDA
// kernel uses, must read the same elements). Mutated row programs must fail the comparison. f64
// reductions never become row reductions (row_rule.hpp says why): tested too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "luminal/compiler/build_space.hpp"
#include "luminal/core/error.hpp"
#include "luminal/kernels/fused_program.hpp"
#include "luminal/kernels/fusion.hpp"
#include "luminal/kernels/row_rule.hpp"
#include "luminal/luminal.hpp"
#include "luminal/runtime/reference_ops.hpp"
#include "support/row_graphs.hpp"
#include "support/row_rules_only.hpp"

namespace luminal {
namespace {

using testing::kTestFused;
using testing::kTestRow;
using testing::RowRulesOnly;

// ---------------------------------------------------------------- the interpreter

using Buffers = std::map<std::string, HostBuffer, std::less<>>;

/// `v` stored into a `t` element and read back (floats round, integers wrap, Bool is v != 0).
double round_to(DType t, double v) {
  uint8_t b[8] = {};
  store_from_double(t, b, 0, v);
  return load_as_double(t, b, 0);
}
double wrap_to(DType t, int64_t v) {
  uint8_t b[8] = {};
  store_from_int64(t, b, 0, v);
  return load_as_double(t, b, 0);
}

/// One element of a non-load, non-reduction instruction whose operands (of dtype `src`) hold
/// a, b, c; computed in the reference's compute type of `src` (f32 for the floats below 64 bits,
/// f64, or exact 64-bit integers) and rounded to the instruction's dtype.
double apply(const FusedInst& in, DType src, double a, double b, double c) {
  const DType t = in.dtype;
  if (in.op == FusedOpcode::Select) return a != 0 ? b : c;
  if (in.op == FusedOpcode::Cast) {
    if (src == t) return a;
    return is_float(src) ? round_to(t, a) : wrap_to(t, static_cast<int64_t>(a));
  }
  if (in.op == FusedOpcode::LessThan) return a < b ? 1 : 0;  // operands are exact in `src`
  if (!is_float(src)) {
    const auto x = static_cast<int64_t>(a), y = static_cast<int64_t>(b);
    const auto ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
    switch (in.op) {
      case FusedOpcode::Add: return wrap_to(t, static_cast<int64_t>(ux + uy));
      case FusedOpcode::Mul: return wrap_to(t, static_cast<int64_t>(ux * uy));
      case FusedOpcode::Mod: return wrap_to(t, y == 0 || y == -1 ? 0 : x % y);
      default: throw Error("no integer " + std::string(opcode_name(in.op)));
    }
  }
  auto math = [&](auto x, auto y) -> double {
    using C = decltype(x);
    switch (in.op) {
      case FusedOpcode::Exp2: return std::exp2(x);
      case FusedOpcode::Log2: return std::log2(x);
      case FusedOpcode::Sin: return std::sin(x);
      case FusedOpcode::Recip: return C(1) / x;
      case FusedOpcode::Sqrt: return std::sqrt(x);
      case FusedOpcode::Add: return x + y;
      case FusedOpcode::Mul: return x * y;
      case FusedOpcode::Mod: return std::fmod(x, y);
      default: throw Error("unexpected " + std::string(opcode_name(in.op)));
    }
  };
  if (src == DType::F64) return math(a, b);
  return round_to(t, math(static_cast<float>(a), static_cast<float>(b)));
}

/// A test.Fused or test.Row node: its program run row by row (test.Fused: one row of every
/// element), each instruction a vector over the row; loads read child k through views[k] at the
/// flat output index.
HostBuffer run_program(const LlirNode& n, const std::vector<const HostBuffer*>& in,
                       const DynMap& dyn) {
  const auto* prog = dynamic_cast<const FusedProgram*>(n.attrs.payload.get());
  if (!prog) throw Error(std::string(n.op->name) + " without a FusedProgram");
  prog->validate();
  const std::vector<FusedInst>& insts = prog->insts;
  if (insts.back().dtype != n.attrs.dtype) throw Error("the result dtype is not the node's");
  const bool row = n.op == &kTestRow;
  if (!row && prog->has_row_reduce()) throw Error("test.Fused with a row reduction");
  const std::vector<int64_t> shape = eval_shape(n.attrs.shape, dyn);
  if (row && shape.empty()) throw Error("test.Row of rank 0");
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  std::vector<reference::StridedView> views;
  for (const View& v : n.attrs.views) {
    views.emplace_back(v, dyn);
    if (views.back().numel() != count) throw Error("a view of another element count");
    if (!row) continue;
    // cuda.Row reads through the view re-expressed over the output shape: the same offsets.
    std::optional<View> over = view_over(v, n.attrs.shape);
    if (!over) throw Error("view " + v.to_string() + " has no form over the output shape");
    const reference::StridedView o(*over, dyn);
    for (int64_t i = 0; i < count; ++i)
      if (o.offset_of_flat(i) != views.back().offset_of_flat(i))
        throw Error("view_over(" + v.to_string() + ") reads other elements");
  }
  const int64_t L = row ? shape.back() : count;
  const int64_t rows = L > 0 ? count / L : 0;
  HostBuffer out{n.attrs.dtype, std::vector<uint8_t>(count * size_bytes(n.attrs.dtype))};
  std::vector<std::vector<double>> v(insts.size(), std::vector<double>(L));
  for (int64_t r = 0; r < rows; ++r) {
    for (size_t j = 0; j < insts.size(); ++j) {
      const FusedInst& i = insts[j];
      std::vector<double>& d = v[j];
      if (i.op == FusedOpcode::Load) {
        const HostBuffer& b = *in.at(i.a);
        if (b.dtype != i.dtype) throw Error("a load of another dtype");
        for (int64_t l = 0; l < L; ++l)
          d[l] = load_as_double(i.dtype, b.bytes.data(), views[i.a].offset_of_flat(r * L + l));
      } else if (i.op == FusedOpcode::Const) {
        const double c = is_float(i.dtype)        ? round_to(i.dtype, i.value)
                         : i.dtype == DType::Bool ? (i.value != 0 ? 1 : 0)
                                                  : wrap_to(i.dtype, i.int_value);
        std::fill(d.begin(), d.end(), c);
      } else if (is_row_reduce(i.op)) {
        // 32 lanes over strided elements, then a tree (one fixed order; see the header).
        const bool sum = i.op == FusedOpcode::RowSum;
        auto add = [sum](double a, double x) {
          return sum ? a + x : std::isnan(x) || std::isnan(a) ? NAN : std::max(a, x);
        };
        double lane[32];
        std::fill(std::begin(lane), std::end(lane), sum ? 0.0 : -INFINITY);
        for (int64_t l = 0; l < L; ++l)
          lane[l % 32] = add(lane[l % 32], v[i.a][l]);
        for (int w = 16; w > 0; w /= 2)
          for (int k = 0; k < w; ++k)
            lane[k] = add(lane[k], lane[k + w]);
        std::fill(d.begin(), d.end(), round_to(i.dtype, lane[0]));
      } else {
        const DType src = insts[i.op == FusedOpcode::Select ? i.b : i.a].dtype;
        const int k = arity(i.op);
        for (int64_t l = 0; l < L; ++l)
          d[l] = apply(i, src, v[i.a][l], k > 1 ? v[i.b][l] : 0, k > 2 ? v[i.c][l] : 0);
      }
    }
    for (int64_t l = 0; l < L; ++l)
      store_from_double(n.attrs.dtype, out.bytes.data(), r * L + l, v.back()[l]);
  }
  return out;
}

/// Runs an LLIR program on the host: Inputs from `inputs`, the test ops by run_program, HLIR
/// nodes by the reference's kernels. Returns the Outputs by label.
Buffers run_llir(const LlirGraph& g, const Buffers& inputs, const DynMap& dyn) {
  std::vector<HostBuffer> vals(g.nodes.size());
  Buffers outs;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const LlirNode& n = g.nodes[i];
    std::vector<const HostBuffer*> in;
    for (int k : n.inputs)
      in.push_back(&vals.at(k));
    if (is_op(n.op, OpKind::Input)) {
      vals[i] = inputs.at(n.attrs.label);
    } else if (n.op == &kTestFused || n.op == &kTestRow) {
      vals[i] = run_program(n, in, dyn);
    } else {
      if (!n.op->is_hlir) throw Error("unexpected op " + std::string(n.op->name));
      Node h;
      h.op = n.op->kind;
      h.dtype = n.attrs.dtype;
      h.shape = n.attrs.shape;
      for (const View& v : n.attrs.views)
        h.inputs.push_back(Operand{-1, v});
      h.label = n.attrs.label;
      h.value = n.attrs.value;
      h.int_value = n.attrs.int_value;
      h.iota_expr = n.attrs.iota_expr;
      h.iota_len = n.attrs.iota_len;
      h.axis = n.attrs.axis;
      vals[i] = reference::run_node(h, in, dyn, eval_shape(h.shape, dyn));
    }
    if (is_op(n.op, OpKind::Output)) outs[n.attrs.label] = vals[i];
  }
  return outs;
}

// ---------------------------------------------------------------- graphs and data

using Kind = testing::RowKind;
constexpr auto& kKinds = testing::kRowKinds;
std::string kind_name(Kind k) { return testing::row_kind_name(k); }

Graph make_graph(Kind k, DType t, const std::vector<Dim>& shape) {
  return testing::row_graph(k, t, shape, 4, 1024);
}

/// Seeded data for every input of `g` at `dyn`, already representable in its dtype. The mask
/// masks all of rows 1, 4, ..., every third element of rows 0, 3, ..., and none of the rest.
Buffers make_inputs(const Graph& g, const DynMap& dyn, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-4.0, 4.0);
  Buffers in;
  for (NodeId id : g.inputs()) {
    const Node& n = g.node(id);
    const std::vector<int64_t> shape = eval_shape(n.shape, dyn);
    int64_t count = 1;
    for (int64_t d : shape)
      count *= d;
    const int64_t L = shape.back();
    HostBuffer b{n.dtype, std::vector<uint8_t>(count * size_bytes(n.dtype))};
    for (int64_t i = 0; i < count; ++i) {
      const int64_t row = i / L, l = i % L;
      const double v =
          n.dtype == DType::Bool ? (row % 3 == 1 || (row % 3 == 0 && l % 3 == 0)) : u(rng);
      store_from_double(n.dtype, b.bytes.data(), i, v);
    }
    in[n.label] = std::move(b);
  }
  return in;
}

/// "" when `got` matches `want` (both NaN, equal, or close), else the first mismatch and how
/// many there are. Every instruction rounds as the reference does; what may differ is a sum
/// rounding to the neighbour of the reference's (the order of a row's additions), a difference
/// of the compute type's epsilon (f32 for bf16) that cancellation turns into an absolute one at
/// the row's scale, and the final rounding to the output dtype that it can tip.
std::string compare(const HostBuffer& got, const std::vector<double>& want, int64_t L) {
  if (got.numel() != static_cast<int64_t>(want.size())) return "element counts differ";
  const DType t = got.dtype;
  const double k = 4.0 + std::log2(static_cast<double>(std::max<int64_t>(L, 1)));
  const double ce = epsilon(t == DType::F64 ? t : DType::F32) * k;  // the compute type's
  const double oe = epsilon(t) + ce;
  std::string first;
  int64_t bad = 0;
  for (int64_t r = 0; L > 0 && r < got.numel() / L; ++r) {
    double scale = 0;
    for (int64_t l = 0; l < L; ++l)
      if (std::isfinite(want[r * L + l])) scale = std::max(scale, std::abs(want[r * L + l]));
    for (int64_t i = r * L; i < (r + 1) * L; ++i) {
      const double g = load_as_double(t, got.bytes.data(), i), w = want[i];
      if ((std::isnan(g) && std::isnan(w)) || g == w ||
          std::abs(g - w) <= oe * std::abs(w) + ce * scale)
        continue;
      if (bad++ == 0)
        first = "element " + std::to_string(i) + ": got " + std::to_string(g) + ", reference " +
                std::to_string(w);
    }
  }
  return bad == 0 ? "" : first + " (" + std::to_string(bad) + " mismatches)";
}

// ---------------------------------------------------------------- the cases

struct ShapeCase {
  std::string name;
  std::vector<Dim> lead;      // the axes before the row's
  std::vector<int64_t> s_at;  // the values of s it runs at (none: s is not used)
  bool dynamic_len = false;   // the row length is the dim c (run at c = L)

  std::vector<Dim> dims(int64_t L) const {
    std::vector<Dim> d = lead;
    d.push_back(dynamic_len ? Dim("c") : Dim(L));
    return d;
  }
  std::vector<DynMap> evals(int64_t L) const {
    std::vector<DynMap> out;
    for (int64_t s : s_at)
      out.push_back({{"s", s}});
    if (out.empty()) out.emplace_back();
    if (dynamic_len)
      for (DynMap& d : out)
        d["c"] = L;
    return out;
  }
};

std::vector<ShapeCase> shape_cases() {
  return {{"[1, L]", {1}, {}},
          {"[3, L]", {3}, {}},
          {"[s, L]", {"s"}, {1, 3}},
          {"[2, 3, L]", {2, 3}, {}},
          {"[s, c]", {"s"}, {3}, true}};
}

/// Runs `l` at every dim map of `sc` against the reference of `g`; "" when all match.
std::string check_program(const Graph& g, const LlirGraph& l, const ShapeCase& sc, int64_t L) {
  for (const DynMap& dyn : sc.evals(L)) {
    const Buffers in = make_inputs(g, dyn, 7 + L);
    ReferenceRuntime rt(g);
    for (const auto& [label, b] : in)
      rt.set_bytes(label, b.bytes.data(), b.bytes.size());
    rt.execute(dyn);
    const Buffers got = run_llir(l, in, dyn);
    const std::string why = compare(got.at("y"), rt.get<double>("y"), L);
    if (!why.empty()) return why;
  }
  return "";
}

class RowRule : public ::testing::TestWithParam<std::tuple<Kind, DType>> {};

TEST_P(RowRule, ProgramsMatchTheReference) {
  const auto [kind, t] = GetParam();
  RowRulesOnly backend;
  int programs = 0, with_row = 0;
  for (int64_t L : {int64_t{1}, int64_t{31}, int64_t{33}, int64_t{1000}}) {
    for (const ShapeCase& sc : shape_cases()) {
      const std::vector<Dim> dims = sc.dims(L);
      const Graph g = make_graph(kind, t, dims);
      BuiltSpace b = build_search_space(g, backend, g.dim_facts());
      Rng rng(static_cast<uint64_t>(L) * 31 + dims.size());
      for (int d = 0; d < 6; ++d) {
        const LlirGraph l = to_llir(
            *b.space, d == 0 ? b.space->fewest_kernels_genome() : b.space->random_genome(rng));
        const auto mix = l.op_mix();
        SCOPED_TRACE(sc.name + " L=" + std::to_string(L) +
                     (d == 0 ? " fewest kernels" : " random") + "\n" + l.to_text());
        if (d == 0 && L > 1) {
          // One kernel: the rule absorbed the whole op (the residual add, the mask and the
          // weights' casts too). Besides it, with a dynamic row length, only the length as a
          // value (Iota, Cast of it).
          EXPECT_EQ(mix.count("test.Row") ? mix.at("test.Row") : 0, 1);
          for (const auto& [op, n] : mix)
            EXPECT_TRUE(op == "test.Row" || (sc.dynamic_len && (op == "Cast" || op == "Iota")))
                << n << " " << op;
        }
        const std::string why = check_program(g, l, sc, L);
        EXPECT_EQ(why, "");
        ++programs;
        with_row += mix.count("test.Row") > 0;
      }
    }
  }
  EXPECT_GT(with_row, programs / 8) << "the programs rarely pick the row kernel";
  RecordProperty("programs", programs);
}

INSTANTIATE_TEST_SUITE_P(Graphs, RowRule,
                         ::testing::Combine(::testing::ValuesIn(kKinds),
                                            ::testing::Values(DType::F32, DType::BF16)),
                         [](const auto& info) {
                           return kind_name(std::get<0>(info.param)) + "_" +
                                  std::string(name(std::get<1>(info.param)));
                         });

// ---------------------------------------------------------------- the test can fail

/// `l` with every instruction of its row programs that `mutate` changes (it returns true) changed.
LlirGraph mutated(const LlirGraph& l, const std::function<bool(FusedInst&)>& mutate) {
  LlirGraph out = l;
  bool changed = false;
  for (LlirNode& n : out.nodes) {
    if (n.op != &kTestRow) continue;
    auto p =
        std::make_shared<FusedProgram>(*static_cast<const FusedProgram*>(n.attrs.payload.get()));
    bool here = false;
    for (FusedInst& i : p->insts)
      here = mutate(i) || here;
    if (here) n.attrs.payload = p;
    changed = changed || here;
  }
  EXPECT_TRUE(changed) << "no instruction to mutate in\n" << l.to_text();
  return out;
}

TEST(RowRuleMutations, AreCaught) {
  RowRulesOnly backend;
  const ShapeCase sc = shape_cases()[2];  // [s, L] at s = 1 and 3
  // Each mutation changes what the program means for every graph below.
  const std::vector<std::pair<std::string, std::function<bool(FusedInst&)>>> mutations = {
      {"rowsum -> rowmax",
       [](FusedInst& i) {
         if (i.op != FusedOpcode::RowSum) return false;
         i.op = FusedOpcode::RowMax;
         return true;
       }},
      {"rowsum -> no reduction (a same-dtype cast)",
       [](FusedInst& i) {
         if (i.op != FusedOpcode::RowSum) return false;
         i.op = FusedOpcode::Cast;
         return true;
       }},
      // (Plus one, not a scale: an RMSNorm's only constant that matters at ordinary values is
      // its eps, which scaling by 1.5 moves by less than the tolerance.)
      {"every float constant plus one",
       [](FusedInst& i) {
         if (i.op != FusedOpcode::Const || !is_float(i.dtype) || !std::isfinite(i.value))
           return false;
         i.value += 1;
         return true;
       }},
  };
  for (Kind kind : kKinds) {
    for (DType t : {DType::F32, DType::BF16}) {
      const Graph g = make_graph(kind, t, {"s", 33});
      BuiltSpace b = build_search_space(g, backend, g.dim_facts());
      const LlirGraph l = to_llir(*b.space, b.space->fewest_kernels_genome());
      SCOPED_TRACE(kind_name(kind) + " " + std::string(name(t)) + "\n" + l.to_text());
      ASSERT_EQ(check_program(g, l, sc, 33), "");
      for (const auto& [what, m] : mutations)
        EXPECT_NE(check_program(g, mutated(l, m), sc, 33), "") << what << " was not caught";
    }
  }
}

// f64 sums stay SumReduce kernels: a row reduction adds in another order than the SumReduce
// kernel, and f64 math downstream (the correctly rounded division x / sum) would turn two
// computations of one sum that differ in the last bit into a wrong result. f32 still fuses.
TEST(RowRuleF64, SumsAreNotRowReductions) {
  RowRulesOnly backend;
  for (DType t : {DType::F64, DType::F32}) {
    Graph g;
    Tensor x = g.tensor("x", {4, 33}, t);
    (x / x.sum(-1, true)).output("y");
    x.softmax(-1).output("p");
    BuiltSpace b = build_search_space(g, backend, g.dim_facts());
    size_t rows = 0;
    for (ClassId c = 0; c < b.eg->num_classes(); ++c) {
      if (b.eg->find(c) != c) continue;
      for (ENodeId n : b.eg->nodes_of(c))
        rows += b.eg->node(n).op == &kTestRow;
    }
    if (t == DType::F64)
      EXPECT_EQ(rows, 0u) << "an f64 row reduction";
    else
      EXPECT_GT(rows, 0u);
  }
}

}  // namespace
}  // namespace luminal

// cuda.RowGemv: a GEMV that computes its activation row itself. Where a decode GEMV's activation
// is a one-row cuda.Row's output (the RMSNorm before q/k/v, before gate/up, before an MoE's
// router), each block of the GEMV first runs that row program into shared memory (cuda.Row's code
// for the row, with the GEMV's 256 threads: row.cpp, row_into_shared) and then its own loop,
// reading the activation from there. The integer GEMVs over GGUF blocks (cuda.QGemvQ8 and its
// forms) take a cuda.RowQ8's row the same way: the row, then its Q8_1 blocks, in shared memory. No
// row kernel runs before the GEMV: one kernel fewer on the step's critical path, and none at all
// where every reader of the row takes this form (issue 28's "RMSNorm's row scale ... computed
// inside" the next GEMV; docs/cuda.md, "A row computed by the GEMV").
//
// Matched on structure: an e-node E of a generated GEMV form (cuda.Gemv, its cast, epilogue,
// rope-product, paired and store-into-scatter forms: kInner) whose operand 0 reads its class as
// one row along k (stride 0 along every other axis), where that class holds a cuda.Row e-node R
// with one row of a constant length L (L bytes at most kMaxRowBytes). The new e-node, in E's
// class:
//   children = R's input 0, E's children 1.., R's inputs 1..;
//   views    = R's view 0, E's views 1.., R's views 1..;
//   payload  = RowGemvPayload (E's op and payload, R's program, dtype and shape, E's view 0);
// so E's other inputs keep their positions (a scatter's destination stays input 2 or 3, the
// op's in-place input: one op for each, kRowGemv / kRowGemv2 / kRowGemv3, and kRowQGemv.. around
// the integer forms, which like them are not library_replaces). Its generator runs
// E's generator on E's node with a RowPrologue in the GenContext (codegen.hpp).
//
// Numerics: the row's code is cuda.Row's with another thread count, so its sums (in double, of
// f32 chunk sums) may add in another order: within one rounding of the row kernel's values where
// those sums round differently to the row's dtype; the GEMV's own sums are E's.
//
// On by default (LUMINAL_CUDA_ROW_PROLOGUE=0 turns it off; the models' GPU parity and fuzz pass
// with it on an H100, 2026-12-07). Seed cost: E's less 0.05, so
// the fewest-kernels seed moves each reader of the row to this form, and the row kernel drops out
// once none reads it; the search times it against E and the row kernel.
#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "luminal/core/error.hpp"
#include "luminal/core/expr_serial.hpp"
#include "luminal/core/hash.hpp"
#include "luminal/cuda/cuda_op.hpp"
#include "luminal/cuda/gemv_form.hpp"
#include "luminal/cuda/row_prologue.hpp"
#include "luminal/kernels/fused_program.hpp"

namespace luminal::cuda {

namespace {

double row_gemv_seed(const EGraph& eg, uint32_t enode);

const OpDef kRowGemv{.name = "cuda.RowGemv",
                     .seed_cost = 0.0,
                     .library_replaces = true,
                     .seed_extra = row_gemv_seed};
const OpDef kRowGemv2{.name = "cuda.RowGemvInPlace2",
                      .inplace_input = 2,
                      .seed_cost = 0.0,
                      .library_replaces = true,
                      .seed_extra = row_gemv_seed};
const OpDef kRowGemv3{.name = "cuda.RowGemvInPlace3",
                      .inplace_input = 3,
                      .seed_cost = 0.0,
                      .library_replaces = true,
                      .seed_extra = row_gemv_seed};
// The integer forms' (like theirs, not library_replaces: the library-preferring seed keeps them).
const OpDef kRowQGemv{.name = "cuda.RowQGemv", .seed_cost = 0.0, .seed_extra = row_gemv_seed};
const OpDef kRowQGemv2{.name = "cuda.RowQGemvInPlace2",
                       .inplace_input = 2,
                       .seed_cost = 0.0,
                       .seed_extra = row_gemv_seed};
const OpDef kRowQGemv3{.name = "cuda.RowQGemvInPlace3",
                       .inplace_input = 3,
                       .seed_cost = 0.0,
                       .seed_extra = row_gemv_seed};

// The GEMV forms that take a computed row (their generators go through gen_gemv_over).
constexpr std::string_view kInner[] = {
    // (over 16- and 32-bit weights: the row's values)
    "cuda.Gemv", "cuda.GemvCast", "cuda.GemvEpi", "cuda.GemvCastEpi", "cuda.GemvMatmul",
    "cuda.GemvCastMatmul", "cuda.GemvGlu", "cuda.GemvCastGlu", "cuda.GemvScatter",
    "cuda.GemvCastScatter", "cuda.GemvMatmulScatter", "cuda.GemvCastMatmulScatter",
    // (the integer forms over GGUF blocks: the row's Q8_1 blocks, a cuda.RowQ8's)
    "cuda.QGemvQ8", "cuda.QGemvQ8Epi", "cuda.QGemvQ8Glu", "cuda.QGemvQ8Matmul",
    "cuda.QGemvQ8Scatter", "cuda.QGemvQ8MatmulScatter",
    // (and over the split layout, cuda.QRepack's, folded at load: the same row in shared memory)
    "cuda.QGemvQ8S", "cuda.QGemvQ8SEpi", "cuda.QGemvQ8SGlu", "cuda.QGemvQ8SMatmul",
    "cuda.QGemvQ8SScatter", "cuda.QGemvQ8SMatmulScatter"};

bool inner_op(const OpDef* op) {
  for (std::string_view n : kInner)
    if (op->name == n) return true;
  return false;
}

/// The largest weight (MiB) whose GEMV takes the row: LUMINAL_CUDA_ROW_PROLOGUE_MIB (default 4,
/// SmolLM2's matrices and an MoE's router and k/v, none of an 8B's).
int max_weight_mib() { return env_int("LUMINAL_CUDA_ROW_PROLOGUE_MIB", 4, 0, 1 << 16); }

// The row in shared memory: 32 KiB (with the GEMV's own shared arrays, under the 48 KiB of a
// block's static shared memory).
constexpr int64_t kMaxRowBytes = 32 * 1024;

// "<length>:<text>" so that nested texts may hold spaces.
std::string field(std::string_view text) {
  return std::to_string(text.size()) + ":" + std::string(text);
}

}  // namespace

struct RowGemvPayload final : Payload {
  const OpDef* inner = nullptr;                  // E's op
  std::shared_ptr<const Payload> inner_payload;  // E's payload, or null
  std::shared_ptr<const FusedProgram> row;       // R's program
  DType row_dtype = DType::F32;                  // R's output
  int row_inputs = 1;                            // R's inputs (each loaded by its program)
  Shape row_shape;
  View x_view;  // how E read R's output (its view 0)

  std::string_view kind() const override { return "row_gemv"; }
  std::string serialize() const override {
    std::string s = std::string(inner->name) + " " + std::string(name(row_dtype)) + " " +
                    std::to_string(row_inputs) + " " + std::to_string(row_shape.size());
    for (const Expr& d : row_shape)
      s += " " + write_expr(d);
    s += " " + write_view(x_view) + " " + field(row->serialize());
    if (inner_payload)
      s += " " + field(inner_payload->kind()) + " " + field(inner_payload->serialize());
    return s;
  }
  size_t hash() const override { return hash_combined(0x526f7747ULL, hash_string(serialize())); }
  bool equals(const Payload& o) const override {
    const auto& p = static_cast<const RowGemvPayload&>(o);
    if (inner != p.inner || row_dtype != p.row_dtype || row_inputs != p.row_inputs ||
        !(row_shape == p.row_shape) || !(x_view == p.x_view) || !row->equals(*p.row) ||
        !inner_payload != !p.inner_payload)
      return false;
    return !inner_payload || (inner_payload->kind() == p.inner_payload->kind() &&
                              inner_payload->equals(*p.inner_payload));
  }
  std::string to_string() const override {
    return "row_gemv(" + std::string(inner->name) + ", row " + row->to_string() +
           (inner_payload ? ", " + inner_payload->to_string() : "") + ")";
  }
};

namespace {

double row_gemv_seed(const EGraph& eg, uint32_t enode) {
  const auto* p = dynamic_cast<const RowGemvPayload*>(eg.attrs_of(enode).payload.get());
  if (!p) return 1.0;
  // (the inner op's extra reads children 0 and 1 for the weight's size: child 1 is still it)
  return p->inner->seed_cost - 0.05 + (p->inner->seed_extra ? p->inner->seed_extra(eg, enode) : 0);
}

/// The inputs a row program reads: its highest load index + 1.
size_t loaded_inputs(const FusedProgram& prog) {
  size_t n = 0;
  for (const FusedInst& in : prog.insts)
    if (in.op == FusedOpcode::Load) n = std::max(n, static_cast<size_t>(in.a) + 1);
  return n;
}

/// A float GEMV form reads its operand 0 as the activation of one row (the generator's form, on
/// the domain it takes): not so where operand 0 is the one shared across a few outputs.
bool activation_first(const EGraph& eg, const ENode& en, const Attrs& ea) {
  if (en.op->name.rfind("cuda.QGemvQ8", 0) == 0) return true;  // (the activation is input 0)
  Attrs core = ea;
  core.views.resize(2);
  const DType t0 = eg.dtype(en.children[0]), t1 = eg.dtype(en.children[1]);
  const std::optional<Attrs> d = gemv_domain(core, t0, t1, Facts{});
  const std::optional<GemvForm> f = gemv_form(d ? *d : core, t0, t1, Facts{});
  return f && f->shared == 1 && f->rows == 1;
}

const OpDef* form_for(const OpDef* inner) {
  const bool q = inner->name.rfind("cuda.QGemvQ8", 0) == 0;
  if (inner->inplace_input < 0) return q ? &kRowQGemv : &kRowGemv;
  if (inner->inplace_input == 2) return q ? &kRowQGemv2 : &kRowGemv2;
  if (inner->inplace_input == 3) return q ? &kRowQGemv3 : &kRowGemv3;
  return nullptr;
}

void apply(const Match& m, EGraph& eg) {
  const ENodeId e = m.node("g");
  const ENode en = eg.node(e);
  const Attrs ea = eg.attrs_of(e);
  const OpDef* op = form_for(en.op);
  if (!op || en.children.size() < 2 || ea.views.size() != en.children.size()) return;
  const int64_t L = one_row_length(ea.views[0], ea.axis);
  if (L <= 0 || !activation_first(eg, en, ea)) return;
  const ClassId xc = eg.find(en.children[0]);
  // (a Q8_1 row is computed in f32 first)
  const bool q8 = eg.dtype(xc) == DType::Q8_1;
  if ((q8 ? L * 4 : static_cast<int64_t>(storage_bytes(eg.dtype(xc), L))) > kMaxRowBytes) return;
  // Only over small weights: every block computes the row, reading all its inputs, so a GEMV of
  // many blocks (a large weight) reads them many times over.
  const ClassId wc = eg.find(en.children[1]);
  const Expr wn = numel(eg.shape(wc));
  if (!wn.is_const() || storage_bytes(eg.dtype(wc), wn.as_const()) >
                            (uint64_t{static_cast<uint64_t>(max_weight_mib())} << 20))
    return;
  std::vector<std::pair<Attrs, std::vector<ClassId>>> offers;
  for (ENodeId r : eg.nodes_of(xc)) {
    if (eg.node(r).op != (q8 ? cuda_row_q8_op() : cuda_row_op())) continue;
    const Attrs& ra = eg.attrs_of(r);
    // (a split Q8_1 row, int_value 1, feeds the split forms: in shared memory the row is in
    // the plain layout whichever the class's, the generator's int_value being 0)
    const auto* prog = dynamic_cast<const FusedProgram*>(ra.payload.get());
    const std::vector<ClassId>& rc = eg.node(r).children;
    if (!prog || rc.empty() || ra.views.size() != rc.size() || loaded_inputs(*prog) != rc.size() ||
        ra.shape.empty() || !(ra.shape.back() == Expr(L)) || !(numel(ra.shape) == Expr(L)))
      continue;
    auto p = std::make_shared<RowGemvPayload>();
    p->inner = en.op;
    p->inner_payload = ea.payload;
    p->row = std::static_pointer_cast<const FusedProgram>(ra.payload);
    p->row_dtype = ra.dtype;
    p->row_inputs = static_cast<int>(rc.size());
    p->row_shape = ra.shape;
    p->x_view = ea.views[0];
    Attrs a = ea;
    a.payload = p;
    a.views = {ra.views[0]};
    std::vector<ClassId> kids = {rc[0]};
    for (size_t i = 1; i < en.children.size(); ++i) {
      a.views.push_back(ea.views[i]);
      kids.push_back(en.children[i]);
    }
    for (size_t i = 1; i < rc.size(); ++i) {
      a.views.push_back(ra.views[i]);
      kids.push_back(rc[i]);
    }
    offers.emplace_back(std::move(a), std::move(kids));
  }
  for (auto& [a, kids] : offers)
    eg.merge(eg.add(op, a, kids), m.root);
}

std::vector<Rule> rules() {
  if (!env_switch_on("LUMINAL_CUDA_ROW_PROLOGUE")) return {};
  // (the limit in the rule's name: the compile cache's key names the rules)
  return {Rule{"cuda.row-gemv-" + std::to_string(max_weight_mib()),
               Pattern::any_op(inner_op).bind("g"), nullptr, apply}};
}

KernelGen gen_row_gemv(const LlirNode& n, const GenContext& ctx) {
  const auto* p = dynamic_cast<const RowGemvPayload*>(n.attrs.payload.get());
  const CudaOp* inner = p ? find_cuda_op(p->inner) : nullptr;
  if (!p || !inner)
    throw Error(std::string(n.op->name) + ": the node has no row_gemv payload naming a CUDA op");
  // The row's inputs: input 0, then the last (R's inputs - 1); E's: the ones between.
  const size_t r = static_cast<size_t>(p->row_inputs);
  if (r == 0 || n.inputs.size() < r + 1 || n.input_dtypes.size() != n.inputs.size() ||
      n.attrs.views.size() != n.inputs.size())
    throw Error(std::string(n.op->name) + ": needs the row's " + std::to_string(r) +
                " inputs and the GEMV's, got " + std::to_string(n.inputs.size()));
  const size_t ne = n.inputs.size() - (r - 1);  // E's input count
  LlirNode row;
  row.op = p->row_dtype == DType::Q8_1 ? cuda_row_q8_op() : cuda_row_op();
  row.attrs.dtype = p->row_dtype;
  row.attrs.shape = p->row_shape;
  row.attrs.payload = p->row;
  RowPrologue rp;
  rp.row = &row;
  for (size_t i = 0; i < r; ++i) {
    const size_t at = i == 0 ? 0 : ne + i - 1;
    row.inputs.push_back(n.inputs[at]);
    row.input_dtypes.push_back(n.input_dtypes[at]);
    row.attrs.views.push_back(n.attrs.views[at]);
    rp.inputs.push_back("in" + std::to_string(at));
  }
  LlirNode e = n;
  e.op = p->inner;
  e.inputs.resize(ne);
  e.input_dtypes.resize(ne);
  e.attrs.views.resize(ne);
  e.input_dtypes[0] = p->row_dtype;
  e.attrs.views[0] = p->x_view;
  e.attrs.payload = p->inner_payload;
  GenContext rctx = ctx;
  rctx.row_prologue = &rp;
  return inner->generate(e, rctx);
}

}  // namespace

int64_t one_row_length(const View& v, int axis) {
  if (axis < 0 || axis >= v.rank() || v.has_base() ||
      !(v.strides[static_cast<size_t>(axis)] == Expr::z()) ||
      !v.dims[static_cast<size_t>(axis)].is_const())
    return 0;
  for (int d = 0; d < v.rank(); ++d)
    if (d != axis && !(v.strides[static_cast<size_t>(d)] == Expr(0)) &&
        !(v.dims[static_cast<size_t>(d)] == Expr(1)))
      return 0;
  return v.dims[static_cast<size_t>(axis)].as_const();
}

std::shared_ptr<const Payload> read_row_gemv_payload(std::string_view text) {
  const std::string all(text);
  auto bad = [&](const std::string& why) {
    return Error("row_gemv payload: " + why + " in '" + all + "'");
  };
  auto word = [&] {
    const size_t sp = text.find(' ');
    std::string w(text.substr(0, sp));
    text.remove_prefix(sp == std::string_view::npos ? text.size() : sp + 1);
    return w;
  };
  auto count = [&](int lo, int hi) {
    const std::string w = word();
    int v = -1;
    try {
      v = std::stoi(w);
    } catch (const std::exception&) {
    }
    if (v < lo || v > hi)
      throw bad("a count from " + std::to_string(lo) + " to " + std::to_string(hi) +
                " expected, got '" + w + "'");
    return v;
  };
  auto lenfield = [&] {
    const size_t colon = text.find(':');
    if (colon == std::string_view::npos) throw bad("a <length>:<text> field expected");
    size_t len = 0;
    try {
      len = static_cast<size_t>(std::stoul(std::string(text.substr(0, colon))));
    } catch (const std::exception&) {
      throw bad("a field's length expected");
    }
    if (colon + 1 + len > text.size()) throw bad("a field runs past the end");
    std::string f(text.substr(colon + 1, len));
    text.remove_prefix(colon + 1 + len);
    if (!text.empty() && text.front() == ' ') text.remove_prefix(1);
    return f;
  };
  auto p = std::make_shared<RowGemvPayload>();
  const std::string op = word();
  p->inner = cuda_registry().named(op);
  if (!p->inner || !inner_op(p->inner)) throw bad("'" + op + "' is no GEMV form that takes a row");
  p->row_dtype = parse_dtype(word());
  p->row_inputs = count(1, 64);
  const int rank = count(1, 16);
  for (int i = 0; i < rank; ++i)
    p->row_shape.push_back(read_expr_prefix(text));
  p->x_view = read_view_prefix(text, "row_gemv payload");
  p->row = FusedProgram::deserialize(lenfield());
  if (!text.empty()) {
    const std::string kind = lenfield();
    const std::string body = lenfield();
    p->inner_payload = cuda_registry().read_payload(kind, body);
    if (!p->inner_payload) throw bad("unknown inner payload kind '" + kind + "'");
  }
  if (!text.empty()) throw bad("text left over");
  return p;
}

void register_row_gemv_ops(std::vector<const CudaOp*>& ops) {
  static const CudaOp row_gemv{&kRowGemv, "cuda.row-gemv", rules, gen_row_gemv};
  static const CudaOp row_gemv2{&kRowGemv2, "", nullptr, gen_row_gemv};
  static const CudaOp row_gemv3{&kRowGemv3, "", nullptr, gen_row_gemv};
  static const CudaOp row_qgemv{&kRowQGemv, "", nullptr, gen_row_gemv};
  static const CudaOp row_qgemv2{&kRowQGemv2, "", nullptr, gen_row_gemv};
  static const CudaOp row_qgemv3{&kRowQGemv3, "", nullptr, gen_row_gemv};
  ops.push_back(&row_gemv);
  ops.push_back(&row_gemv2);
  ops.push_back(&row_gemv3);
  ops.push_back(&row_qgemv);
  ops.push_back(&row_qgemv2);
  ops.push_back(&row_qgemv3);
}

}  // namespace luminal::cuda

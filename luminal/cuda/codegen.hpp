#pragma once
// Source generation shared by the CUDA ops (internal to luminal/cuda).
// Example: examples/snippets/cuda/codegen.cpp (the kernel of a transposed copy: its parameters,
// the dims prologue, a view's offset and one launch).
//
// A node's kernels are CUDA C++ over typed pointers: `out`, `in0`, `in1`, ..., then the device
// dims array (one int64 per slot of the plan, read at kernel start into `d<slot>` locals) and
// the error word. Sizes and offsets come from the node's Exprs printed with Expr::to_c; the
// index type is 32-bit when Expr::bounds over the bucket's facts proves every element count and
// offset below 2^31 (minus a margin for grid-stride steps), 64-bit otherwise.
#include <array>
#include <functional>
#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include "luminal/core/dtype.hpp"
#include "luminal/core/expr.hpp"
#include "luminal/core/shape.hpp"
#include "luminal/kernels/fused_program.hpp"
#include "luminal/program/llir.hpp"

namespace luminal::cuda {

/// A kernel whose stores go to a scatter's destination instead of its own output
/// (scatter_store.cpp, "store into a scatter"): the node it generates for has two more inputs after
/// its own, the destination (whose buffer the output is: in place) and the indexes, and `out[t] =
/// v` in its code writes the destination's flat element idx[t] (skipped outside it). The generator
/// sees the node without them; Codegen adds their parameters and makes `out` the redirecting proxy
/// (lmn_scatter_out in the prelude).
struct ScatterStore {
  DType index_dtype = DType::I32;  // the indexes' dtype (read contiguously: idx[t])
  Expr count;                      // the destination's element count
};

/// A GEMV whose activation (its input 0, one row) is a cuda.Row's output that each block
/// computes into shared memory first (row_prologue.cpp, "a row computed by the GEMV"): the node
/// it generates for has the row's first input in place of the activation and the row's other
/// inputs after its own (after a ScatterStore's two). Codegen types in0 as the row's input 0 and
/// adds the others' parameters, named by `inputs`; the GEMV's generator writes the row
/// (row_into_shared) and reads it from there.
struct RowPrologue {
  const LlirNode* row = nullptr;    // the row: op cuda.Row, its attrs and input dtypes
  std::vector<std::string> inputs;  // each row input's name in the kernel ("in0", ...)
};

/// What generating a kernel may read besides the node.
struct GenContext {
  const Facts& facts;                    // the bucket's dim ranges
  const std::vector<std::string>& dims;  // slot order of the device dims array
  int sm_count = 132;
  const ScatterStore* scatter_store = nullptr;  // stores redirected (above), or none
  const RowPrologue* row_prologue = nullptr;    // the activation computed in the kernel, or none
};

/// One kernel launch of a node: entry point, threads per block, grid (x, y, z) as Exprs of the
/// dims (evaluated per dim change), dynamic shared memory bytes.
struct Launch {
  std::string entry;
  int block = 256;
  std::array<Expr, 3> grid{Expr(1), Expr(1), Expr(1)};
  /// Skipped when the node writes in place into its in-place input's own buffer (the copy that
  /// precedes an in-place update whose target had to get a buffer of its own).
  bool skip_when_aliased = false;
};

/// A node's code: one translation unit (prelude included) and its launches, run in order.
struct KernelGen {
  std::string source;
  std::vector<Launch> launches;
  /// Cost hints for per-kernel statistics: bytes moved and flops, as Exprs of the dims.
  Expr bytes, flops;
};

class Codegen {
 public:
  Codegen(const LlirNode& node, const GenContext& ctx);

  /// "int" or "long long".
  const std::string& idx() const { return idx_; }
  bool wide() const { return wide_; }
  /// `e` as C over the index type; dims print as d<slot>, `z` as `z_name` when given.
  std::string c(const Expr& e, const std::string& z_name = {}, const Expr& z_dim = Expr(0));
  /// Appends statements to `body` that compute the element offset of flat index `flat` through
  /// view `v`, its base included (axis `skip`, if >= 0, is left out of the unflattening and
  /// offset); returns the name of the offset variable.
  std::string view_offset(const View& v, const std::string& flat, const std::string& name,
                          std::string& body, int skip = -1);
  /// The offset contribution of axis `axis` of `v` at index expression `index` (the view's base
  /// not included).
  std::string axis_offset(const View& v, int axis, const std::string& index);
  /// The parameter list: `out` of the node's dtype, `in<k>` of each input's dtype, dims, err
  /// (with a ScatterStore: the raw output `lmn_out`, then the destination and index inputs after
  /// the node's own; with a RowPrologue: in0 of the row's input 0 dtype, and the row's other
  /// inputs last).
  std::string params(bool restrict_ptrs = true) const;
  /// The kernel's first statements: lmn_pdl() (wait for the kernel before it when launched with a
  /// programmatic dependency, then let the next one launch), then every dim the kernel used
  /// loaded into locals (call after generating the body). With `before_wait`: the dims first,
  /// then those statements, then lmn_pdl(): work that needs no earlier kernel's result (an L2
  /// prefetch, a hint that is safe over any bytes) overlaps the kernel before. With
  /// LUMINAL_CUDA_DIMS_EARLY=1 the dims come before lmn_pdl() in every kernel.
  std::string dims_prologue(const std::string& before_wait = "") const;
  /// The translation unit: prelude + `kernels` text.
  static std::string unit(const std::string& kernels);

  /// Marks the index type wide when `e`'s upper bound over the facts could reach 2^31.
  void require(const Expr& e);

 private:
  const LlirNode& node_;
  const GenContext& ctx_;
  int slot_of(const std::string& dim) const;

  std::set<int> used_;  // slots read
  bool wide_ = false;
  std::string idx_ = "int";
  std::string scatter_count_;  // the ScatterStore's count as C
};

/// Largest element offset `v` can produce in the bucket (its base and the sum of each axis'
/// largest stride contribution); INT64_MAX when unbounded.
int64_t view_max_offset(const View& v, const Facts& facts);
/// True when `v` can be read `width` elements at a time along `axis` with aligned vector loads:
/// a unit stride along the axis, a constant length that is a multiple of `width`, and every other
/// axis stepping by whole vectors (buffers themselves are 256-aligned).
bool aligned_chunks(const View& v, int axis, int width);
/// Elements of dtype `t` per 16-byte vector load along `axis` when aligned_chunks holds, else 1.
int vector_width(const View& v, int axis, DType t);
/// The C type of an aligned vector of `bytes` bytes (16: uint4, 8: uint2, 4, 2, 1).
std::string vector_type(int bytes);

/// Throws luminal::Error naming `n`'s op unless its output is bf16 or f16 (the matmul ops that
/// store their f32 result rounded to 16 bits).
void require_sixteen_bit_output(const LlirNode& n);
/// The load of a matmul operand's element `e` of dtype `t` in a product kernel: ldm_T (one
/// instruction, no NaN payload: the product makes any NaN canonical) for f32, bf16 and f16, ld_T
/// for the other dtypes.
std::string operand_load(DType t, const std::string& e);
/// `acc` plus the product of `a` and `b` (operand values of dtypes `ta`, `tb`) rounded to
/// `product_t`, as the matmul kernels add a product into an f32 partial sum: a fused multiply-add
/// where two 16-bit operands make the f32 product exact, else the rounded product added.
std::string product_add(DType product_t, DType ta, DType tb, const std::string& a,
                        const std::string& b, const std::string& acc);
/// The lines of generated source `ls`, each ended by a newline.
std::string lines(std::initializer_list<std::string> ls);
/// The backend's LUMINAL_CUDA_* switches: true unless the variable `name` is "0".
bool env_switch_on(const char* name);
/// The opt-in switches (forms off until they have run on a GPU): true only when `name` is "1".
bool env_opt_in(const char* name);
/// The integer in variable `name` (`fallback` when unset or empty); throws luminal::Error naming
/// it when it is not a whole number (trailing characters included) or outside [lo, hi].
int env_int(const char* name, int fallback, int lo, int hi);
/// The C expression of a fused-program instruction that is neither a load nor a row reduction,
/// its operands named v<k>: computed in its dtype's compute type and rounded to the dtype (rd_T),
/// as the reference computes the HLIR op.
/// With `keep_nan_payload` false (nan_payload_kept says the payload cannot reach an output, and
/// fast_nan() is on), a rounding to bf16/f16 is rdm_T: the hardware's conversion, no NaN checks.
std::string inst_code(const FusedInst& in, bool keep_nan_payload = true);
/// Per instruction of `prog`: whether a NaN payload in its value can reach the stored result (the
/// root, through float-to-float casts and the arms of a select). Where it cannot, loads and
/// roundings may drop payloads: every float operation turns a NaN into the canonical NaN anyway,
/// and reductions (a sum in double, max.NaN) do too.
std::vector<bool> nan_payload_kept(const FusedProgram& prog);
/// bf16 or f16: the floats whose loads and roundings have one-instruction forms (ldm_T, rdm_T).
bool sixteen_bit_float(DType t);
/// The NaN fast paths (ldm_T loads, rdm_T roundings where nan_payload_kept is false): on by
/// default, off with LUMINAL_CUDA_FAST_NAN=0 (every load and rounding keeps NaN payloads).
bool fast_nan();
/// The load function for dtype `t`: ldm_T (one instruction, no NaN payload) for bf16/f16 when
/// the payload is not kept and fast_nan() is on, else ld_T.
std::string load_fn(DType t, bool keep_nan_payload);
/// inst_code without its final rounding: the expression inside rd_T(...), with `rounded` set,
/// or (Select, LessThan) the whole expression with `rounded` cleared. Storing st_T of it equals
/// storing st_T(rd_T(it)).
std::string unrounded_code(const FusedInst& in, bool* rounded);
/// A C literal of `value` in dtype `t`'s compute type, exact (hex floats).
std::string literal(DType t, double value, int64_t int_value);

/// A reduction's accumulator in generated code (SumReduce, MaxReduce and the kernels that do
/// their work): sums in double, integers in 64 bits wrapping to the dtype, max propagating NaN.
struct ReduceAcc {
  bool is_max = false;
  DType in = DType::F32;  // the values reduced
  bool integral() const { return !is_float(in); }
  /// The C type: "double" or "long long".
  std::string type() const;
  /// The starting value: 0, or the least value of `in` (-inf for floats).
  std::string init() const;
  /// The expression combining a and b.
  std::string combine(const std::string& a, const std::string& b) const;
};

/// The statements of an elementwise `prog` (no row reductions), appended to `body`, one
/// `const C_T v<j> = ...;` per instruction; loads come from `load(inst, j, keep_nan_payload)`,
/// which may append statements (offsets) to `body` and returns the loaded value's expression.
/// Returns the result's name.
std::string emit_statements(const FusedProgram& prog, std::string& body,
                            const std::function<std::string(const FusedInst&, size_t, bool)>& load);

}  // namespace luminal::cuda

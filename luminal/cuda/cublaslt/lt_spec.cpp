#include "luminal/cuda/cublaslt/lt_spec.hpp"

#include <cstring>
#include <limits>

#include "luminal/core/error.hpp"

namespace luminal::cuda {

namespace {

bool is_fp8(DType t) { return t == DType::F8E4M3 || t == DType::F8E5M2; }

cudaDataType_t storage_type(DType t) {
  switch (t) {
    case DType::F32:
    case DType::TF32: return CUDA_R_32F;
    case DType::F64: return CUDA_R_64F;
    case DType::F16: return CUDA_R_16F;
    case DType::BF16: return CUDA_R_16BF;
    case DType::F8E4M3: return CUDA_R_8F_E4M3;
    case DType::F8E5M2: return CUDA_R_8F_E5M2;
    default: return CUDA_R_32F;  // not reached: lt_types refuses other dtypes first
  }
}

const char* compute_name(cublasComputeType_t c) {
  switch (c) {
    case CUBLAS_COMPUTE_32F: return "32F";
    case CUBLAS_COMPUTE_32F_FAST_TF32: return "32F_FAST_TF32";
    case CUBLAS_COMPUTE_64F: return "64F";
    default: return "other";
  }
}

void mix(size_t* h, uint64_t v) { *h ^= v + 0x9E3779B97F4A7C15ull + (*h << 6) + (*h >> 2); }

}  // namespace

const char* lt_type_name(cudaDataType_t t) {
  switch (t) {
    case CUDA_R_32F: return "f32";
    case CUDA_R_64F: return "f64";
    case CUDA_R_16F: return "f16";
    case CUDA_R_16BF: return "bf16";
    case CUDA_R_8F_E4M3: return "f8e4m3";
    case CUDA_R_8F_E5M2: return "f8e5m2";
    default: return "other";
  }
}

std::optional<LtTypes> lt_types(DType a, DType b, DType d, bool allow_tf32, std::string* why) {
  auto no = [&](const std::string& w) -> std::optional<LtTypes> {
    if (why) *why = w;
    return std::nullopt;
  };
  const std::string what =
      std::string(name(a)) + " x " + std::string(name(b)) + " -> " + std::string(name(d));
  LtTypes t{storage_type(a), storage_type(b), storage_type(d),
            storage_type(d), CUDA_R_32F,      CUBLAS_COMPUTE_32F};
  if (is_fp8(a) || is_fp8(b)) {
    if (!is_fp8(a) || !is_fp8(b)) return no(what + ": FP8 needs both operands in FP8");
    if (a == DType::F8E5M2 && b == DType::F8E5M2)
      return no(what + ": cuBLASLt has no E5M2 x E5M2 matmul");
    if (d != DType::F32 && d != DType::BF16) return no(what + ": FP8 output must be f32 or bf16");
    return t;
  }
  if (a != b) return no(what + ": cuBLASLt needs equal operand types (except FP8 pairs)");
  switch (a) {
    case DType::F32:
      if (d != DType::F32) return no(what + ": f32 operands give an f32 output");
      if (allow_tf32) t.compute = CUBLAS_COMPUTE_32F_FAST_TF32;
      return t;
    case DType::TF32:
      if (d != DType::F32 && d != DType::TF32)
        return no(what + ": tf32 operands give an f32 or tf32 output");
      t.compute = CUBLAS_COMPUTE_32F_FAST_TF32;
      return t;
    case DType::F16:
    case DType::BF16:
      if (d != a && d != DType::F32)
        return no(what + ": 16-bit operands give an output of their type or f32");
      return t;
    case DType::F64:
      if (d != DType::F64) return no(what + ": f64 operands give an f64 output");
      t.scale = CUDA_R_64F;
      t.compute = CUBLAS_COMPUTE_64F;
      return t;
    default: return no(what + ": no cuBLASLt matmul for " + std::string(name(a)));
  }
}

LtSpec lt_spec(const LibGemm<int64_t>& g, const LtTypes& t, uint64_t workspace) {
  if (g.count > std::numeric_limits<int32_t>::max())
    throw Error("cuBLASLt: batch count " + std::to_string(g.count) + " is above 2^31 - 1");
  const cublasLtOrder_t order =
      g.family == GemmFamily::ColSwapped ? CUBLASLT_ORDER_COL : CUBLASLT_ORDER_ROW;
  auto matrix = [&](cudaDataType_t type, const LibMatrix<int64_t>& m, int64_t stride) {
    LtMatrixSpec s;
    s.type = type;
    s.rows = static_cast<uint64_t>(m.rows);
    s.cols = static_cast<uint64_t>(m.cols);
    s.ld = m.ld;
    s.batch_stride = g.count > 1 ? stride : 0;
    s.order = order;
    return s;
  };
  LtSpec s;
  s.m = static_cast<uint64_t>(g.m);
  s.n = static_cast<uint64_t>(g.n);
  s.k = static_cast<uint64_t>(g.k);
  s.batch = static_cast<int32_t>(g.count);
  s.op_a = g.op_a_t ? CUBLAS_OP_T : CUBLAS_OP_N;
  s.op_b = g.op_b_t ? CUBLAS_OP_T : CUBLAS_OP_N;
  // t.a / t.b are the types of the matmul's inputs 0 / 1; the family decides which input is the
  // library's A.
  s.a = matrix(g.input_a == 0 ? t.a : t.b, g.a, g.stride_a);
  s.b = matrix(g.input_b == 0 ? t.a : t.b, g.b, g.stride_b);
  s.d = matrix(t.d, g.d, g.stride_d);
  s.c = s.d;
  s.c.type = t.c;
  s.compute = t.compute;
  s.scale = t.scale;
  s.workspace = workspace;
  return s;
}

bool lt_is_fp8(const LtSpec& s) {
  for (cudaDataType_t t : {s.a.type, s.b.type})
    if (t == CUDA_R_8F_E4M3 || t == CUDA_R_8F_E5M2) return true;
  return false;
}

std::string lt_fp8_problem(const LtSpec& s) {
  if (!lt_is_fp8(s)) return "";
  if (s.a.order != CUBLASLT_ORDER_COL || s.op_a != CUBLAS_OP_T || s.op_b != CUBLAS_OP_N)
    return "FP8 needs the column-major TN form (x @ W^T with both row-major)";
  for (const LtMatrixSpec* m : {&s.a, &s.b, &s.c, &s.d})
    if (m->ld % 16 != 0 || m->batch_stride % 16 != 0)
      return "FP8 needs leading dimensions and batch strides that are multiples of 16 elements";
  for (uint32_t al : s.align)
    if (al < 16) return "FP8 needs 16-byte aligned pointers";
  return "";
}

uint32_t pointer_alignment(uint64_t address) {
  if (address == 0) return 256;
  const uint64_t low = address & (~address + 1);
  return static_cast<uint32_t>(low < 256 ? low : 256);
}

bool LtSpec::operator==(const LtSpec& o) const {
  return m == o.m && n == o.n && k == o.k && batch == o.batch && op_a == o.op_a && op_b == o.op_b &&
         a == o.a && b == o.b && c == o.c && d == o.d && compute == o.compute && scale == o.scale &&
         alpha == o.alpha && beta == o.beta && epilogue == o.epilogue && scale_a == o.scale_a &&
         std::memcmp(align, o.align, sizeof(align)) == 0 && workspace == o.workspace;
}

size_t LtSpec::hash() const {
  size_t h = 0;
  for (uint64_t v :
       {m, n, k, static_cast<uint64_t>(batch), static_cast<uint64_t>(op_a),
        static_cast<uint64_t>(op_b), static_cast<uint64_t>(compute), static_cast<uint64_t>(scale),
        static_cast<uint64_t>(epilogue), workspace, static_cast<uint64_t>(scale_a)})
    mix(&h, v);
  for (const LtMatrixSpec* x : {&a, &b, &c, &d})
    for (uint64_t v :
         {static_cast<uint64_t>(x->type), x->rows, x->cols, static_cast<uint64_t>(x->ld),
          static_cast<uint64_t>(x->batch_stride), static_cast<uint64_t>(x->order)})
      mix(&h, v);
  for (uint32_t al : align)
    mix(&h, al);
  uint64_t bits;
  std::memcpy(&bits, &alpha, sizeof bits);
  mix(&h, bits);
  std::memcpy(&bits, &beta, sizeof bits);
  mix(&h, bits);
  return h;
}

std::string LtSpec::to_string() const {
  auto mat = [&](const char* nm, const LtMatrixSpec& x, int al) {
    std::string r = std::string(nm) + "=" + lt_type_name(x.type) +
                    (x.order == CUBLASLT_ORDER_COL ? " col " : " row ") + std::to_string(x.rows) +
                    "x" + std::to_string(x.cols) + " ld " + std::to_string(x.ld);
    if (batch > 1) r += " stride " + std::to_string(x.batch_stride);
    return r + " align " + std::to_string(al);
  };
  std::string r =
      "m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
      " batch=" + std::to_string(batch) + " op " + (op_a == CUBLAS_OP_T ? "T" : "N") +
      (op_b == CUBLAS_OP_T ? "T" : "N") + ", " + mat("A", a, static_cast<int>(align[0])) + ", " +
      mat("B", b, static_cast<int>(align[1])) + ", " + mat("C", c, static_cast<int>(align[2])) +
      ", " + mat("D", d, static_cast<int>(align[3])) + ", compute " + compute_name(compute) +
      ", scale " + lt_type_name(scale) + ", alpha " + std::to_string(alpha) + ", beta " +
      std::to_string(beta);
  if (epilogue != CUBLASLT_EPILOGUE_DEFAULT)
    r += ", epilogue " + std::to_string(static_cast<int>(epilogue));
  if (scale_a) r += ", scaled";
  return r + ", workspace " + std::to_string(workspace);
}

}  // namespace luminal::cuda

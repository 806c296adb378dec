// cuda.QGemmBF16: a prefill linear layer over block-quantized weights on the bf16 tensor cores,
// the weight dequantised into shared memory a tile at a time.
//
// cuda.QGemmQ8 (qgemm.cpp) keeps the weight's integers and multiplies them with 8-bit activation
// rows: each 32-value block is one int8 MMA whose sum then needs its own scales, four float
// operations per output an MMA, and those bound it (about 66 int8 TOPS on an H100, a fifteenth
// of the tensor cores' rate). Here each weight value is dequantised once per tile of 64
// activation rows, w = a q + b rounded to bf16, and the MMAs (m16n8k16, bf16 in, f32
// accumulated) need nothing after them: the scales are in the values. The activation rows come
// as bf16 from cuda.QuantizeQ8 in its BF16 format (quantize_q8.cpp: each x rounded to nearest
// bf16 once, shared by every layer that reads x).
//
// Numerics: each product is of x and w rounded to bf16 (each within 2^-8 of its value, relative:
// 8 significant bits, as Q8_1's largest values, where Q8_1's smaller ones are coarser; w after
// its f32 computation, 2^-23 more), exact in f32; the products summed by the MMAs in f32, blocks
// in order, the two k halves added at the end (with split k, each block's part so and the parts
// added in rank order: fewer sequential sums, the same bound). So
// |y - sum x w| <= sum |x w| (2^-7 + 2^-15) + gamma(K / 16 + 4) sum |x w|
// (tests/cuda/qgemm_bf16_test.cpp checks that bound, and with scales and activations exact in
// bf16 the exact sum to the accumulation's rounding alone).
//
// Layout: a block of 8 warps covers 64 activation rows and 64 weight rows and walks k 64 values
// (two 32-value units) a step, double-buffered in shared memory. Each thread holds two steps'
// bytes in registers: at step s it issues step s + 2's loads (four groups of 4 activation values,
// and two lanes' shares of weight units: QRG / QRS below), the warps multiply step s's tiles,
// and it decodes step s + 1's bytes into the other buffer (values 4t..4t+3 and 16+4t..16+4t+3 of
// a unit, as QB_<t> of qgemm.cpp gives them). A load is thus in flight over two steps' MMAs: with
// the decode right after its load (the first version) a step waited out a DRAM round trip and
// the kernel ran at 61-66 TFLOPS on an H100, as slow as cuda.QGemmQ8. Warp (wm, wn, ks) takes
// rows 32 wm.., weight rows 32 wn.. and the k half ks of each step; the halves are joined
// through shared memory. The K types (a unit one 32-value sub-block, QB_<t>::load / dec of
// qgemm.cpp; Q6_K's halves scaled apart) unless LUMINAL_CUDA_QGEMM_BF16_K=0. The tall form
// (LUMINAL_CUDA_QGEMM_BF16_ROWS=128, gen_qgemm_bf16_tall) covers 128 activation rows a block.
#include <algorithm>
#include <string>

#include "luminal/core/error.hpp"
#include "luminal/cuda/cuda_op.hpp"
#include "luminal/cuda/prelude.hpp"
#include "luminal/cuda/qgemm.hpp"
#include "luminal/cuda/quant_device.hpp"

namespace luminal::cuda {

namespace {

/// A weight of fewer than 2^22 values gives too few 64 x 64 tiles, each a short walk along k, to
/// keep an H100 busy: there cuda.QGemmQ8's 32 x 32 tiles with k split over 8 warps were faster
/// (SmolLM2's projections, 576 x 576 to 1536 x 576: a 128-token prefill's 210 GEMMs took 1.79 ms
/// that way against 2.90 in this form), where from an 8B model's 1024 x 4096 up this form took
/// 0.43-0.58 of its time. So the seeds take this form for large weights only (0.1 more below;
/// for large ones the int8 forms cost 0.4 more, qgemm.cpp's large_weight_extra, so that a norm
/// writing Q8_1 rows itself does not keep them there).
double small_weight_extra(const EGraph& eg, uint32_t enode) {
  return gemm_weight_size(eg, enode) == WeightSize::Small ? 0.1 : 0.0;
}

// (below cuda.QGemmQ8's 0.35 and cuda.QGemmQ8S's 0.3 for large weights, above for small ones)
// (not const: qgemm.cpp's qgemm_rules() sets library_replaces, see there)
OpDef kQGemmBF16{.name = "cuda.QGemmBF16", .seed_cost = 0.28, .seed_extra = small_weight_extra};
OpDef kQGemmBF16S{.name = "cuda.QGemmBF16S", .seed_cost = 0.25, .seed_extra = small_weight_extra};

constexpr int kBlock = 256;
constexpr int kTile = 64;    // activation rows, weight rows and k values a step
constexpr int kStride = 72;  // bf16 a tile row in shared memory (conflict-free fragment loads)
constexpr int kMinStepsASplit = 8;  // (split k: each block's part at least this many steps)

/// The blocks of a cluster that split k between them (1: none). A 128-token prefill of an 8B
/// model gives few 64 x 64 tiles where N is small: 32 for k and v (N = 1024), 128 for q, o and
/// down, on 132 SMs that each hold two such blocks, and each block walks K = 4096 (down: 14336)
/// in 64-value steps with a DRAM round trip and a barrier in each. Split over the C blocks of a
/// cluster (C = 1, 2, 4 or 8: the most that keeps the tiles times C within two blocks an SM, each
/// part at least kMinStepsASplit steps), a tile's k parts run on C SMs at once and are added in
/// rank order through distributed shared memory. By default C = 2 where each part keeps
/// kMinStepsASplit steps (else 1): on an H100 (2026-12-07) the 8B q4_0 prefill's 224 GEMMs took
/// 15.6 ms so, 19.1 ms with C = 1, 19.9 ms with 4 everywhere and 16.2 ms as chosen below (8 for k
/// and v): a cluster's barriers and its sum through shared memory cost more than the SMs it adds
/// beyond 2. LUMINAL_CUDA_QGEMM_BF16_SPLIT=N: N = 1, 2, 4 or 8 takes N; 0 chooses the most of
/// 1/2/4/8 that keeps the tiles times C within two blocks an SM, each part at least
/// kMinStepsASplit steps.
/// (`min_steps`: kMinStepsASplit in the steps of the form: 64 values, or 32 in the tall form)
int split_count(int64_t tiles, int64_t steps, int sm_count, int64_t min_steps) {
  const int set = env_int("LUMINAL_CUDA_QGEMM_BF16_SPLIT", -1, 0, 8);
  if (set > 0 && (set & (set - 1)) != 0)
    throw Error("LUMINAL_CUDA_QGEMM_BF16_SPLIT=" + std::to_string(set) +
                " is not 0, 1, 2, 4 or 8; give one of those");
  int c = 1;
  if (set < 0) {
    c = steps / 2 >= min_steps ? 2 : 1;
  } else if (set > 0) {
    c = set;
  } else {
    while (c < 8 && tiles * c * 2 <= 2 * static_cast<int64_t>(sm_count) &&
           steps / (c * 2) >= min_steps)
      c *= 2;
  }
  // No block without a part: halve while the first c - 1 parts would cover every step.
  while (c > 1 && (steps + c - 1) / c * (c - 1) >= steps)
    c /= 2;
  return c;
}

// The weight's decoding (after quant_device_source() and qgemm_device_source(); the host test
// compiles it for the CPU too): the QR* decoders and lmn_bf2.
const char* kBf16Decode = R"(
#ifndef LMN_QGEMM_BF16_DECODE
#define LMN_QGEMM_BF16_DECODE
/* A lane's share of a unit in two steps, its bytes into registers (load) and then its B
   fragment words, scale and min (dec), so that a step's loads are in flight while the warps
   multiply the step before: QRG over the GGUF layout (QI_<t><4>), QRS over the split layout
   (QS_<t><4>); Q8_0's words are t and t + 4 (QB_q8_0). */
template <class Q>
struct QRG {
  typedef typename Q::Raw Raw;
  static LMN void load(const unsigned char* row, const unsigned char*, int u, int t, Raw& r) {
    Q::load(row, u, t, r);
  }
  static LMN void dec(const Raw& r, int, int t, int& b0, int& b1, float& a, float& a2,
                      float& b) {
    int v[2], w[2];
    Q::ints(r, t, v, w, a, b);
    b0 = v[0]; b1 = v[1]; a2 = a;
  }
};
template <class Q>
struct QRS : QRG<Q> {
  static LMN void load(const unsigned char* body, const unsigned char* head, int u, int t,
                       typename Q::Raw& r) {
    Q::load(body, head, u, t, r);
  }
};
/* The K types (QB_<t> of qgemm.cpp: a unit is a 32-value sub-block; Q6_K's halves have their
   own scales, a and a2). */
template <class Q>
struct QRK {
  typedef typename Q::Raw Raw;
  static LMN void load(const unsigned char* row, const unsigned char*, int u, int t, Raw& r) {
    Q::load(row, u, t, r);
  }
  static LMN void dec(const Raw& r, int u, int, int& b0, int& b1, float& a, float& a2,
                      float& b) {
    Q::dec(r, u, b0, b1, a, a2, b);
  }
};
struct QR8_raw { unsigned int d; int w0, w1; };
LMN void lmn_qr8_dec(const QR8_raw& r, int& b0, int& b1, float& a, float& a2, float& b) {
  b0 = r.w0; b1 = r.w1; a = lmn_h16(r.d); a2 = a; b = 0.0f;
}
struct QRG_q8_0 {
  typedef QR8_raw Raw;
  static LMN void load(const unsigned char* row, const unsigned char*, int u, int t, Raw& r) {
    const unsigned char* p = row + u * 34;
    r.d = lmn_u16(p); r.w0 = (int)lmn_w16(p + 2 + 4 * t); r.w1 = (int)lmn_w16(p + 18 + 4 * t);
  }
  static LMN void dec(const Raw& r, int, int, int& b0, int& b1, float& a, float& a2,
                      float& b) {
    lmn_qr8_dec(r, b0, b1, a, a2, b);
  }
};
struct QRS_q8_0 {
  typedef QR8_raw Raw;
  static LMN void load(const unsigned char* body, const unsigned char* head, int u, int t, Raw& r) {
    r.d = lmn_u16(head + 2 * u);
    r.w0 = __ldg((const int*)(body + u * 32 + 4 * t));
    r.w1 = __ldg((const int*)(body + u * 32 + 16 + 4 * t));
  }
  static LMN void dec(const Raw& r, int, int, int& b0, int& b1, float& a, float& a2,
                      float& b) {
    lmn_qr8_dec(r, b0, b1, a, a2, b);
  }
};
/* Values 2h and 2h + 1 of an int8x4 word q as a q + b, rounded to bf16, packed low first. A
   byte's value v becomes the float 2^23 + v + 128 by a byte permute (its sign bit flipped, under
   the exponent byte 0x4B), then exactly v by a subtraction: two full-rate instructions where the
   int-to-float conversion runs at a quarter rate; the pair is rounded by one cvt. */
LMN unsigned int lmn_bf2(float a, float b, unsigned int qx, int h) {
  const float v0 = __fsub_rn(__uint_as_float(__byte_perm(qx, 0x4B000000u, 0x7540u | (2 * h))),
                             8388736.0f);
  const float v1 = __fsub_rn(__uint_as_float(__byte_perm(qx, 0x4B000000u, 0x7541u | (2 * h))),
                             8388736.0f);
  const float w0 = __fmaf_rn(a, v0, b), w1 = __fmaf_rn(a, v1, b);
#ifdef __CUDA_ARCH__
  unsigned int r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(w1), "f"(w0));
  return r;
#else /* the host test's (finite values, nearest even) */
  unsigned int u0, u1;
  std::memcpy(&u0, &w0, 4);
  std::memcpy(&u1, &w1, 4);
  u0 += 0x7FFFu + ((u0 >> 16) & 1u);
  u1 += 0x7FFFu + ((u1 >> 16) & 1u);
  return (u0 >> 16) | (u1 & 0xFFFF0000u);
#endif
}
#endif
)";

// The tensor-core side: fragment loads and the MMA.
const char* kBf16Mma = R"(
#ifndef LMN_QGEMM_BF16_MMA
#define LMN_QGEMM_BF16_MMA
/* ldmatrix.x4: four 8 x 8 bf16 matrices, lane l giving the address of row l % 8 of matrix l / 8;
   register j holds lane (g, t)'s elements (g, 2t), (g, 2t + 1) of matrix j. */
LMN void lmn_ldm4(unsigned int* r, const unsigned short* p) {
  const unsigned int a = (unsigned int)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
LMN void lmn_mma_bf16(float* c, const unsigned int* a, unsigned int b0, unsigned int b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
#endif
)";

bool bf16_rows(DType x, DType) { return x == DType::BF16; }

/// The weight's decoder (kBf16Decode) for `op`'s type and layout.
std::string decoder(const GemmOperands& op) {
  const std::string tag = quant_tag(op.tw);
  return !legacy_type(op.tw)    ? "QRK<QB_" + tag + ">"
         : op.tw == DType::Q8_0 ? (op.split ? "QRS_q8_0" : "QRG_q8_0")
         : op.split             ? "QRS<QS_" + tag + "<4>>"
                                : "QRG<QI_" + tag + "<4>>";
}

KernelGen gen_qgemm_bf16_tall(const LlirNode& n, const GenContext& ctx, const GemmOperands& op);

/// A warp's MMAs over one buffer: its 32 x 32 outputs (rows wm * 32.., weight rows wn * 32..)
/// over two 16-value k slices from `k_at` (the k half's start, "" for none): the activation
/// tile at `as`, the weight's `b_at` bf16 after it, rows `st` bf16 apart.
std::string warp_mmas(const std::string& as, const std::string& b_at, const std::string& st,
                      const std::string& k_at) {
  return lines({
      "    {",
      "      const unsigned short* As = " + as + ";",
      "      const unsigned short* Bs = As + " + b_at + ";",
      "#pragma unroll",
      "      for (int kk = 0; kk < 2; ++kk) {",
      "        const int k0 = " + k_at + "kk * 16;",
      // A: matrices (rows 0-7, k 0-7), (8-15, 0-7), (0-7, 8-15), (8-15, 8-15) of the m16 tile;
      // B: (weight rows 0-7, k 0-7), (0-7, 8-15), (8-15, 0-7), (8-15, 8-15) of two n8 tiles.
      "        unsigned int af[2][4], bf[2][4];",
      "#pragma unroll",
      "        for (int mi = 0; mi < 2; ++mi)",
      "          lmn_ldm4(af[mi], As + (wm * 32 + mi * 16 + (lane & 15)) * " + st +
          " + k0 + (lane >> 4) * 8);",
      "#pragma unroll",
      "        for (int nh = 0; nh < 2; ++nh)",
      "          lmn_ldm4(bf[nh], Bs + (wn * 32 + nh * 16 + (lane & 7) + (lane >> 4) * 8) * " + st +
          " + k0 + ((lane >> 3) & 1) * 8);",
      "#pragma unroll",
      "        for (int mi = 0; mi < 2; ++mi)",
      "#pragma unroll",
      "          for (int nj = 0; nj < 4; ++nj)",
      "            lmn_mma_bf16(acc[mi][nj], af[mi], bf[nj >> 1][2 * (nj & 1)], "
      "bf[nj >> 1][2 * (nj & 1) + 1]);",
      "      }",
      "    }",
  });
}

/// The k walk over `steps` steps, two of them in registers: steps 0 and 1 loaded and step 0
/// stored before it; then step s (parity p, its buffer and register set p) issues step s + 2's
/// loads into set p (decoded into buffer p at step s - 1), multiplies buffer p, and decodes step
/// s + 1's set into buffer 1 - p, a barrier ending each step. (load(s, set), store(s, set, buf)
/// and compute(buf) give the code of each.)
template <class Load, class Store, class Compute>
std::string pipeline(const Load& load, const Store& store, const Compute& compute,
                     const std::string& steps) {
  auto step = [&](const std::string& s, int p) {
    const std::string ps = std::to_string(p), qs = std::to_string(1 - p);
    return "    if (" + s + " + 2 < " + steps + ") {\n" + load(s + " + 2", ps) + "    }\n" +
           compute(ps) + "    if (" + s + " + 1 < " + steps + ") {\n" + store(s + " + 1", qs, qs) +
           "    }\n    __syncthreads();\n";
  };
  return load("0", "0") + "  if (1 < " + steps + ") {\n" + load("1", "1") + "  }\n" +
         store("0", "0", "0") + "  __syncthreads();\n" + "  for (int s = 0; s < " + steps +
         "; s += 2) {\n" + step("s", 0) + "    if (s + 1 < " + steps + ") {\n" + step("s + 1", 1) +
         "    }\n  }\n";
}

/// The rows of activation a block covers, for a GEMM of at most `m_hi` rows: 64 (the square
/// form) unless LUMINAL_CUDA_QGEMM_BF16_ROWS says 128 (the tall form, gen_qgemm_bf16_tall) or 0
/// (128 where m_hi reaches 128, else 64).
int tile_rows(int64_t m_hi) {
  const int rows = env_int("LUMINAL_CUDA_QGEMM_BF16_ROWS", 64, 0, 128);
  if (rows != 0 && rows != 64 && rows != 128)
    throw Error("LUMINAL_CUDA_QGEMM_BF16_ROWS=" + std::to_string(rows) +
                " is not 0, 64 or 128; give one of those");
  if (rows == 0) return m_hi >= 128 ? 128 : 64;
  return rows;
}

/// Split k's sum in block 0 of a cluster of `C`: v, the output pair at `cp_at` in its own shared
/// memory plus the other blocks' in rank order (lmn_cluster_ld), each line indented by `in` (no
/// newline after the last: an element of the caller's lines()).
std::string cluster_pair_sum(const std::string& cp_at, int C, const std::string& in) {
  std::string r = lines({
      in + "float2 v = " + cp_at + ";",
      in + "for (unsigned q = 1; q < " + std::to_string(C) + "u; ++q) {",
      in + "  const unsigned long long w = lmn_cluster_ld(&" + cp_at + ", q);",
      in + "  v.x = __fadd_rn(v.x, __uint_as_float((unsigned)w));",
      in + "  v.y = __fadd_rn(v.y, __uint_as_float((unsigned)(w >> 32)));",
      in + "}",
  });
  r.pop_back();
  return r;
}

/// The kernel `entry` around `body` (a cluster of `C` blocks along z when C > 1) and its launch:
/// blocks of `rows` activation rows and kTile weight rows.
KernelGen qgemm_bf16_kernel(const Codegen& cg, const GemmOperands& op, const std::string& entry,
                            const std::string& body, int rows, int C) {
  const Expr &M = op.M, &N = op.N, &K = op.K;
  const std::string cluster = C == 1 ? "" : "__cluster_dims__(1, 1, " + std::to_string(C) + ") ";
  std::string k = "extern \"C\" __global__ void " + cluster + "__launch_bounds__(" +
                  std::to_string(kBlock) + ") LMN_ENTRY(" + entry + ")(" + cg.params() + ") {\n";
  k += cg.dims_prologue() + body + "}\n";
  KernelGen gen;
  gen.source =
      Codegen::unit(quant_device_source() + qgemm_device_source() + kBf16Decode + kBf16Mma + k);
  gen.launches.push_back(Launch{
      entry,
      kBlock,
      {ceil_div(M, Expr(int64_t{rows})), ceil_div(N, Expr(int64_t{kTile})), Expr(int64_t{C})}});
  gen.bytes = N * Expr(static_cast<int64_t>(storage_bytes(op.tw, K.as_const()))) + M * K * Expr(2) +
              M * N * Expr(4);
  gen.flops = M * N * K * Expr(2);
  return gen;
}

KernelGen gen_qgemm_bf16(const LlirNode& n, const GenContext& ctx) {
  const bool split = n.op == &kQGemmBF16S;
  const GemmOperands op = gemm_operands(
      n, split, bf16_rows,
      "bf16 activation rows beside q4_0, q4_1, q5_0, q5_1, q8_0, q4_k, q5_k or q6_k weights");
  if (tile_rows(op.M.bounds(ctx.facts).hi) == 128) return gen_qgemm_bf16_tall(n, ctx, op);
  const Expr &M = op.M, &N = op.N, &K = op.K;
  Codegen cg(n, ctx);
  cg.require(M * N);
  cg.require(M * K);
  cg.require(N * K);
  const std::string& I = cg.idx();
  const std::string NU = std::to_string(op.units), KS = std::to_string(K.as_const());
  const int64_t nsteps = (op.units + 1) / 2;
  const int64_t tiles_hi =
      (ceil_div(M, Expr(int64_t{kTile})) * ceil_div(N, Expr(int64_t{kTile}))).bounds(ctx.facts).hi;
  const int C = split_count(tiles_hi, nsteps, ctx.sm_count, kMinStepsASplit);
  const int64_t per = (nsteps + C - 1) / C;
  // Steps are local to the block's part of k: units (sb + s) * 2 + 0/1, s < ns.
  const std::string steps = C == 1 ? std::to_string(nsteps) : "ns";
  const std::string sb = C == 1 ? "" : "sb + ";
  const std::string tile = std::to_string(kTile * kStride);  // bf16 a tile
  const std::string st = std::to_string(kStride);
  std::string body = lines({
      "  const " + I + " M = " + cg.c(M) + ", N = " + cg.c(N) + ";",
      "  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & "
      "3;",
      "  const int wm = warp & 1, wn = (warp >> 1) & 1, ks = warp >> 2;",
      "  const " + I + " m0 = (" + I + ")blockIdx.x * 64, n0 = (" + I + ")blockIdx.y * 64;",
      C == 1 ? std::string()
             : "  const int sb = (int)blockIdx.z * " + std::to_string(per) + ", ns = min(" +
                   std::to_string(per) + ", " + std::to_string(nsteps) + " - sb);",
      "  __shared__ __align__(16) unsigned short sm[4 * " + tile + "];",
      // The activation values this thread loads: rows (tid + 256 i) / 16, values 4 ((tid + 256 i)
      // % 16) of each step's 64.
      "  const unsigned short* xr[4];",
      "#pragma unroll",
      "  for (int i = 0; i < 4; ++i) {",
      "    const " + I + " r = m0 + ((tid + 256 * i) >> 4);",
      "    xr[i] = r < M ? (const unsigned short*)in0 + (long long)r * " + KS + "LL : nullptr;",
      "  }",
      // The weight units this thread dequantises: rows (tid + 256 i) / 8, unit (tid / 4) % 2 of
      // each step's two, lane tid % 4 of it.
      "  const unsigned char* wr[2];",
  });
  if (split) body += "  const unsigned char* wh[2];\n";
  for (int j = 0; j < 2; ++j)
    weight_row_pointer(cg, op, "n0 + ((tid + " + std::to_string(256 * j) + ") >> 3)", j, body);
  const std::string R = decoder(op);
  const std::string wh = split ? "wh[i]" : "nullptr";
  body += lines({
      "  const int bu = (tid >> 2) & 1, bt = tid & 3;",
      // Two register sets of a step's bytes (steps of even and odd index), so that step s + 2's
      // loads are issued while step s is multiplied and step s + 1 decoded.
      "  uint2 ra0[4], ra1[4];",
      "  typename " + R + "::Raw rw0[2], rw1[2];",
      "  float acc[2][4][4];",
      "#pragma unroll",
      "  for (int i = 0; i < 32; ++i) (&acc[0][0][0])[i] = 0.0f;",
  });
  // Step s's bytes into register set `set`: the activation's 4 x 4 values, the weight's units.
  auto load = [&](const std::string& s, const std::string& set) {
    return lines({
        "    {",
        "#pragma unroll",
        "      for (int i = 0; i < 4; ++i) {",
        "        const int k = (" + sb + s + ") * 64 + 4 * ((tid + 256 * i) & 15);",
        "        ra" + set + "[i] = xr[i] && k < " + KS +
            " ? __ldg((const uint2*)(xr[i] + k)) : make_uint2(0u, 0u);",
        "      }",
        "#pragma unroll",
        "      for (int i = 0; i < 2; ++i) {",
        "        const int u = (" + sb + s + ") * 2 + bu;",
        "        if (wr[i] && u < " + NU + ") " + R + "::load(wr[i], " + wh + ", u, bt, rw" + set +
            "[i]);",
        "      }",
        "    }",
    });
  };
  // Register set `set` (step s's) into buffer `buf`: the activation tile [64 rows][64 k] as it
  // is, then the weight's [64 weight rows][64 k] dequantised, each row kStride bf16 apart.
  auto store = [&](const std::string& s, const std::string& set, const std::string& buf) {
    return lines({
        "    {",
        "      unsigned short* As = sm + (" + buf + ") * 2 * " + tile + ";",
        "      unsigned short* Bs = As + " + tile + ";",
        "#pragma unroll",
        "      for (int i = 0; i < 4; ++i)",
        "        *(uint2*)(As + ((tid + 256 * i) >> 4) * " + st +
            " + 4 * ((tid + 256 * i) & 15)) = ra" + set + "[i];",
        "#pragma unroll",
        "      for (int i = 0; i < 2; ++i) {",
        "        const int u = (" + sb + s + ") * 2 + bu;",
        "        unsigned int w0 = 0u, w1 = 0u, w2 = 0u, w3 = 0u;",
        "        if (wr[i] && u < " + NU + ") {",
        "          int b0 = 0, b1 = 0;",
        "          float a = 0.0f, a2 = 0.0f, b = 0.0f;",
        "          " + R + "::dec(rw" + set + "[i], u, bt, b0, b1, a, a2, b);",
        "          const unsigned int x0 = (unsigned int)b0 ^ 0x80808080u, x1 = (unsigned int)b1 ^ "
        "0x80808080u;",
        "          w0 = lmn_bf2(a, b, x0, 0); w1 = lmn_bf2(a, b, x0, 1);",
        "          w2 = lmn_bf2(a2, b, x1, 0); w3 = lmn_bf2(a2, b, x1, 1);",
        "        }",
        "        unsigned short* q = Bs + ((tid + 256 * i) >> 3) * " + st + " + bu * 32 + 4 * bt;",
        "        *(uint2*)q = make_uint2(w0, w1);",
        "        *(uint2*)(q + 16) = make_uint2(w2, w3);",
        "      }",
        "    }",
    });
  };
  // The MMAs of buffer `buf`: warp (wm, wn, ks)'s 32 x 32 tile over k half ks.
  auto compute = [&](const std::string& buf) {
    return warp_mmas("sm + (" + buf + ") * 2 * " + tile, tile, st, "ks * 32 + ");
  };
  body += pipeline(load, store, compute, steps);
  body += lines({
      // The k halves joined: half 1's sums through shared memory (the tiles are done), then
      // half 0's warps add them to theirs, in that order, and store.
      "  float (*part)[32][33] = (float (*)[32][33])sm;",
      "  if (ks == 1) {",
      "#pragma unroll",
      "    for (int mi = 0; mi < 2; ++mi)",
      "#pragma unroll",
      "      for (int nj = 0; nj < 4; ++nj)",
      "#pragma unroll",
      "        for (int e = 0; e < 4; ++e)",
      "          part[wm + 2 * wn][mi * 16 + (e >> 1) * 8 + g][nj * 8 + 2 * t + (e & 1)] = "
      "acc[mi][nj][e];",
      "  }",
      "  __syncthreads();",
  });
  if (C == 1) {
    body += lines({
        "  if (ks == 0) {",
        "#pragma unroll",
        "    for (int mi = 0; mi < 2; ++mi)",
        "#pragma unroll",
        "      for (int nj = 0; nj < 4; ++nj)",
        "#pragma unroll",
        "        for (int e = 0; e < 4; ++e) {",
        "          const int row = mi * 16 + (e >> 1) * 8 + g, col = nj * 8 + 2 * t + (e & 1);",
        "          const " + I + " r = m0 + wm * 32 + row, p = n0 + wn * 32 + col;",
        "          if (r < M && p < N)",
        "            out[r * N + p] = __fadd_rn(acc[mi][nj][e], part[wm + 2 * wn][row][col]);",
        "        }",
        "  }",
    });
  } else {
    // Split k: each block's joined sums (its k parts' halves added as above) as pairs in its
    // shared memory after `part`, then block 0 of the cluster adds the others' in rank order.
    // (each_pair: `inner` for each of warp ks == 0's output pairs, cp_at its place in cp)
    const std::string cp_at = "cp[wm + 2 * wn][row][nj * 4 + t]";
    auto each_pair = [](const std::string& inner) {
      return lines({
                 "#pragma unroll",
                 "    for (int mi = 0; mi < 2; ++mi)",
                 "#pragma unroll",
                 "      for (int nj = 0; nj < 4; ++nj)",
                 "#pragma unroll",
                 "        for (int h = 0; h < 2; ++h) {",
                 "          const int row = mi * 16 + h * 8 + g, col = nj * 8 + 2 * t;",
             }) +
             inner + "        }\n";
    };
    body +=
        "  float2 (*cp)[32][18] = (float2 (*)[32][18])(sm + 8448);  // (18: no bank conflicts)\n";
    body +=
        "  if (ks == 0) {\n" +
        each_pair(lines({
            "          " + cp_at + " = make_float2(",
            "              __fadd_rn(acc[mi][nj][2 * h], part[wm + 2 * wn][row][col]),",
            "              __fadd_rn(acc[mi][nj][2 * h + 1], part[wm + 2 * wn][row][col + 1]));",
        })) +
        "  }\n  lmn_cluster_sync();\n  if (ks == 0 && lmn_cluster_rank() == 0) {\n" +
        each_pair(lines({
            cluster_pair_sum(cp_at, C, "          "),
            "          const " + I + " r = m0 + wm * 32 + row, p = n0 + wn * 32 + col;",
            "          if (r < M && p < N) out[r * N + p] = v.x;",
            "          if (r < M && p + 1 < N) out[r * N + p + 1] = v.y;",
        })) +
        "  }\n  lmn_cluster_sync();  // (the others' shared memory stays until block 0 has "
        "read it)\n";
  }
  return qgemm_bf16_kernel(cg, op, "lmn_qgemm_bf16", body, kTile, C);
}

// The tall form (LUMINAL_CUDA_QGEMM_BF16_ROWS=128): a block covers 128 activation rows and 64
// weight rows and walks k one 32-value unit a step, so each weight value is dequantised once per
// 128 rows (a 128-token prefill reads and decodes each weight once, where the square form does
// both twice) and each warp multiplies all of a step's k: warp (wm, wn) takes rows 32 wm.. (wm
// 0-3) and weight rows 32 wn.. (wn 0-1), with no k halves to join. A step's buffer holds the
// activation's [128][32] and the weight's [64][32] bf16 at kTallStride apart (80 bytes: the
// eight rows of an ldmatrix phase fall in distinct 16-byte bank groups), two buffers 30 KiB, and
// each thread holds two steps' bytes in registers as in the square form (four groups of 4
// activation values, one lane's share of one weight unit). The products are summed in f32 in k
// order in one accumulator (K / 16 MMAs; with split k, each part so and the parts added in rank
// order), within the square form's bound.
constexpr int kTallRows = 128;
constexpr int kTallStride = 40;
constexpr int kTallBuffer = (kTallRows + kTile) * kTallStride;  // bf16 a buffer
constexpr int kTallMinStepsASplit = 2 * kMinStepsASplit;        // (steps of 32 values)

KernelGen gen_qgemm_bf16_tall(const LlirNode& n, const GenContext& ctx, const GemmOperands& op) {
  const bool split = op.split;
  const Expr &M = op.M, &N = op.N, &K = op.K;
  Codegen cg(n, ctx);
  cg.require(M * N);
  cg.require(M * K);
  cg.require(N * K);
  const std::string& I = cg.idx();
  const std::string NU = std::to_string(op.units), KS = std::to_string(K.as_const());
  const int64_t nsteps = op.units;
  const int64_t tiles_hi =
      (ceil_div(M, Expr(int64_t{kTallRows})) * ceil_div(N, Expr(int64_t{kTile})))
          .bounds(ctx.facts)
          .hi;
  const int C = split_count(tiles_hi, nsteps, ctx.sm_count, kTallMinStepsASplit);
  const int64_t per = (nsteps + C - 1) / C;
  const std::string steps = C == 1 ? std::to_string(nsteps) : "ns";
  const std::string sb = C == 1 ? "" : "sb + ";
  const std::string st = std::to_string(kTallStride);
  const std::string buf_size = std::to_string(kTallBuffer);
  const std::string b_at = std::to_string(kTallRows * kTallStride);
  // (split k reuses the buffers for 8 warps' [32 rows][16 + 2] output pairs: 36 KiB)
  const int smem = std::max(2 * kTallBuffer, 8 * 32 * 18 * 4);
  const std::string R = decoder(op);
  std::string body = lines({
      "  const " + I + " M = " + cg.c(M) + ", N = " + cg.c(N) + ";",
      "  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & "
      "3;",
      "  const int wm = warp & 3, wn = warp >> 2;",
      "  const " + I + " m0 = (" + I + ")blockIdx.x * " + std::to_string(kTallRows) + ", n0 = (" +
          I + ")blockIdx.y * 64;",
      C == 1 ? std::string()
             : "  const int sb = (int)blockIdx.z * " + std::to_string(per) + ", ns = min(" +
                   std::to_string(per) + ", " + std::to_string(nsteps) + " - sb);",
      "  __shared__ __align__(16) unsigned short sm[" + std::to_string(smem) + "];",
      // The activation values this thread loads: rows (tid + 256 i) / 8, values 4 ((tid + 256 i)
      // % 8) of each step's 32.
      "  const unsigned short* xr[4];",
      "#pragma unroll",
      "  for (int i = 0; i < 4; ++i) {",
      "    const " + I + " r = m0 + ((tid + 256 * i) >> 3);",
      "    xr[i] = r < M ? (const unsigned short*)in0 + (long long)r * " + KS + "LL : nullptr;",
      "  }",
      // The weight unit this thread dequantises: row tid / 4, lane tid % 4 of each step's unit.
      "  const unsigned char* wr[1];",
  });
  if (split) body += "  const unsigned char* wh[1];\n";
  weight_row_pointer(cg, op, "n0 + (tid >> 2)", 0, body);
  const std::string wh = split ? "wh[0]" : "nullptr";
  body += lines({
      "  const int bt = tid & 3;",
      "  uint2 ra0[4], ra1[4];",
      "  typename " + R + "::Raw rw0, rw1;",
      "  float acc[2][4][4];",
      "#pragma unroll",
      "  for (int i = 0; i < 32; ++i) (&acc[0][0][0])[i] = 0.0f;",
  });
  auto load = [&](const std::string& s, const std::string& set) {
    return lines({
        "    {",
        "#pragma unroll",
        "      for (int i = 0; i < 4; ++i) {",
        "        const int k = (" + sb + s + ") * 32 + 4 * ((tid + 256 * i) & 7);",
        "        ra" + set + "[i] = xr[i] && k < " + KS +
            " ? __ldg((const uint2*)(xr[i] + k)) : make_uint2(0u, 0u);",
        "      }",
        "      if (wr[0]) " + R + "::load(wr[0], " + wh + ", " + sb + s + ", bt, rw" + set + ");",
        "    }",
    });
  };
  auto store = [&](const std::string& s, const std::string& set, const std::string& buf) {
    return lines({
        "    {",
        "      unsigned short* As = sm + (" + buf + ") * " + buf_size + ";",
        "      unsigned short* Bs = As + " + b_at + ";",
        "#pragma unroll",
        "      for (int i = 0; i < 4; ++i)",
        "        *(uint2*)(As + ((tid + 256 * i) >> 3) * " + st +
            " + 4 * ((tid + 256 * i) & 7)) = ra" + set + "[i];",
        "      unsigned int w0 = 0u, w1 = 0u, w2 = 0u, w3 = 0u;",
        "      if (wr[0]) {",
        "        int b0 = 0, b1 = 0;",
        "        float a = 0.0f, a2 = 0.0f, b = 0.0f;",
        "        " + R + "::dec(rw" + set + ", " + sb + s + ", bt, b0, b1, a, a2, b);",
        "        const unsigned int x0 = (unsigned int)b0 ^ 0x80808080u, x1 = (unsigned int)b1 ^ "
        "0x80808080u;",
        "        w0 = lmn_bf2(a, b, x0, 0); w1 = lmn_bf2(a, b, x0, 1);",
        "        w2 = lmn_bf2(a2, b, x1, 0); w3 = lmn_bf2(a2, b, x1, 1);",
        "      }",
        "      unsigned short* q = Bs + (tid >> 2) * " + st + " + 4 * bt;",
        "      *(uint2*)q = make_uint2(w0, w1);",
        "      *(uint2*)(q + 16) = make_uint2(w2, w3);",
        "    }",
    });
  };
  // The MMAs of buffer `buf`: warp (wm, wn)'s 32 x 32 tile over the step's 32 k values.
  auto compute = [&](const std::string& buf) {
    return warp_mmas("sm + (" + buf + ") * " + buf_size, b_at, st, "");
  };
  body += pipeline(load, store, compute, steps);
  if (C == 1) {
    body += lines({
        "#pragma unroll",
        "  for (int mi = 0; mi < 2; ++mi)",
        "#pragma unroll",
        "    for (int nj = 0; nj < 4; ++nj)",
        "#pragma unroll",
        "      for (int e = 0; e < 4; ++e) {",
        "        const " + I + " r = m0 + wm * 32 + mi * 16 + (e >> 1) * 8 + g,",
        "            p = n0 + wn * 32 + nj * 8 + 2 * t + (e & 1);",
        "        if (r < M && p < N) out[r * N + p] = acc[mi][nj][e];",
        "      }",
    });
  } else {
    // Split k: each block's sums as pairs in its shared memory (the steps are done: the loop
    // ends on a barrier), then block 0 of the cluster adds the others' in rank order.
    const std::string cp_at = "cp[warp][mi * 16 + h * 8 + g][nj * 4 + t]";
    auto each_pair = [](const std::string& inner) {
      return lines({
                 "#pragma unroll",
                 "  for (int mi = 0; mi < 2; ++mi)",
                 "#pragma unroll",
                 "    for (int nj = 0; nj < 4; ++nj)",
                 "#pragma unroll",
                 "      for (int h = 0; h < 2; ++h) {",
             }) +
             inner + "      }\n";
    };
    body += "  float2 (*cp)[32][18] = (float2 (*)[32][18])sm;  // (18: no bank conflicts)\n";
    body += each_pair("        " + cp_at +
                      " = make_float2(acc[mi][nj][2 * h], acc[mi][nj][2 * h + 1]);\n");
    body += "  lmn_cluster_sync();\n  if (lmn_cluster_rank() == 0) {\n" +
            each_pair(lines({
                cluster_pair_sum(cp_at, C, "        "),
                "        const " + I + " r = m0 + wm * 32 + mi * 16 + h * 8 + g,",
                "            p = n0 + wn * 32 + nj * 8 + 2 * t;",
                "        if (r < M && p < N) out[r * N + p] = v.x;",
                "        if (r < M && p + 1 < N) out[r * N + p + 1] = v.y;",
            })) +
            "  }\n  lmn_cluster_sync();  // (the others' shared memory stays until block 0 has "
            "read it)\n";
  }
  return qgemm_bf16_kernel(cg, op, "lmn_qgemm_bf16_tall", body, kTallRows, C);
}

}  // namespace

const char* qgemm_bf16_decode_source() { return kBf16Decode; }

OpDef* qgemm_bf16_op(bool split) { return split ? &kQGemmBF16S : &kQGemmBF16; }

void register_qgemm_bf16_ops(std::vector<const CudaOp*>& ops) {
  static const CudaOp plain{&kQGemmBF16, "cuda.library", nullptr, gen_qgemm_bf16};
  static const CudaOp split{&kQGemmBF16S, "cuda.library", nullptr, gen_qgemm_bf16};
  ops.push_back(&plain);
  ops.push_back(&split);
}

}  // namespace luminal::cuda

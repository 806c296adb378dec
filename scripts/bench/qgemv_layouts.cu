// Microbenchmark (H200): Q4_0 x Q8_1 GEMV, m = 1, by weight layout (GGUF blocks or split: quants
// 16-byte aligned, scales apart) and lane mapping (lanes a unit, unroll, warps a row, rows a warp),
// weights cold in L2 (copies cycled in a CUDA graph). Each variant is checked against an f64 dot.
// docs/cuda.md, "The split layout", quotes it. On the GPU machine:
//   nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/qgl scripts/bench/qgemv_layouts.cu && /tmp/qgl
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)

__device__ __forceinline__ int off8(unsigned q) { return (int)((q + 0x78787878u) ^ 0x80808080u); }
__device__ __forceinline__ unsigned w16(const uint8_t* p) {
  const unsigned short* s = (const unsigned short*)p;
  return (unsigned)__ldg(s) | ((unsigned)__ldg(s + 1) << 16);
}

template <int NWQ> struct QW { unsigned v[NWQ]; };

// WL: 0 = GGUF blocks (18 B), 1 = split (16 B quants rows, f16 scales array)
// XL: 0 = Q8_1 blocks (36 B), 1 = split (int8 row, half2 (d, s) array)
template <int WL, int XL, int LPU, int U, int W, int R>
__global__ void __launch_bounds__(256) gemv(const uint8_t* __restrict__ w, const __half* __restrict__ wd,
                                            const uint8_t* __restrict__ x, const __half2* __restrict__ xd,
                                            float* __restrict__ out, int N, int NB) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  constexpr int G = 8 / W, UPS = 32 / LPU, NWQ = 4 / LPU;
  const int g = warp / W, part = warp % W;
  const int row0 = (blockIdx.x * G + g) * R;
  const int grp = lane / LPU, t = lane % LPU;
  __shared__ float red[8][R];
  float acc[R];
#pragma unroll
  for (int r = 0; r < R; ++r) acc[r] = 0.f;
  if (row0 < N) {
    for (int u0 = part * UPS + grp; u0 < NB; u0 += UPS * W * U) {
      QW<NWQ> q[U][R];
      float d[U][R];
#pragma unroll
      for (int uu = 0; uu < U; ++uu) {
        const int u = u0 + uu * UPS * W;
        if (u < NB) {
#pragma unroll
          for (int r = 0; r < R; ++r) {
            const size_t bi = (size_t)(row0 + r) * NB + u;
            if (WL == 0) {
              const uint8_t* p = w + bi * 18;
              d[uu][r] = __half2float(__ldg((const __half*)p));
#pragma unroll
              for (int j = 0; j < NWQ; ++j) q[uu][r].v[j] = w16(p + 2 + 4 * (t * NWQ + j));
            } else {
              const uint8_t* p = w + bi * 16 + 16 / LPU * t;
              d[uu][r] = __half2float(__ldg(wd + bi));
              if (NWQ == 1) q[uu][r].v[0] = __ldg((const unsigned*)p);
              if (NWQ == 2) { uint2 a = __ldg((const uint2*)p); q[uu][r].v[0] = a.x; q[uu][r].v[NWQ > 1 ? 1 : 0] = a.y; }
              if (NWQ == 4) { uint4 a = __ldg((const uint4*)p); q[uu][r].v[0] = a.x; q[uu][r].v[NWQ > 1 ? 1 : 0] = a.y; q[uu][r].v[NWQ > 2 ? 2 : 0] = a.z; q[uu][r].v[NWQ > 3 ? 3 : 0] = a.w; }
            }
          }
        }
      }
#pragma unroll
      for (int uu = 0; uu < U; ++uu) {
        const int u = u0 + uu * UPS * W;
        if (u >= NB) break;
        int xl[NWQ], xh[NWQ];
        float dx;
        if (XL == 0) {
          const uint8_t* p = x + (size_t)u * 36;
          dx = __half2float(__ldg((const __half*)p));
          const int* qi = (const int*)(p + 4);
#pragma unroll
          for (int j = 0; j < NWQ; ++j) { xl[j] = __ldg(qi + t * NWQ + j); xh[j] = __ldg(qi + 4 + t * NWQ + j); }
        } else {
          dx = __low2float(__ldg(xd + u));
          const uint8_t* p = x + (size_t)u * 32;
          if (NWQ == 1) { xl[0] = __ldg((const int*)p + t); xh[0] = __ldg((const int*)p + 4 + t); }
          if (NWQ == 2) { int2 a = __ldg((const int2*)p + t), b = __ldg((const int2*)p + 2 + t); xl[0] = a.x; xl[NWQ > 1 ? 1 : 0] = a.y; xh[0] = b.x; xh[NWQ > 1 ? 1 : 0] = b.y; }
          if (NWQ == 4) { int4 a = __ldg((const int4*)p), b = __ldg((const int4*)p + 1); xl[0] = a.x; xl[NWQ > 1 ? 1 : 0] = a.y; xl[NWQ > 2 ? 2 : 0] = a.z; xl[NWQ > 3 ? 3 : 0] = a.w; xh[0] = b.x; xh[NWQ > 1 ? 1 : 0] = b.y; xh[NWQ > 2 ? 2 : 0] = b.z; xh[NWQ > 3 ? 3 : 0] = b.w; }
        }
#pragma unroll
        for (int r = 0; r < R; ++r) {
          int si = 0;
#pragma unroll
          for (int j = 0; j < NWQ; ++j) {
            si = __dp4a(off8(q[uu][r].v[j] & 0x0F0F0F0Fu), xl[j], si);
            si = __dp4a(off8((q[uu][r].v[j] >> 4) & 0x0F0F0F0Fu), xh[j], si);
          }
          acc[r] = __fmaf_rn(d[uu][r] * dx, (float)si, acc[r]);
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r)
    for (int s = 16; s > 0; s >>= 1) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], s);
  if (W == 1) {
    if (lane == 0 && row0 < N)
      for (int r = 0; r < R; ++r) out[row0 + r] = acc[r];
  } else {
    if (lane == 0) for (int r = 0; r < R; ++r) red[warp][r] = acc[r];
    __syncthreads();
    if (part == 0 && lane == 0 && row0 < N)
      for (int r = 0; r < R; ++r) { float s = 0; for (int o = 0; o < W; ++o) s += red[warp + o][r]; out[row0 + r] = s; }
  }
}

typedef void (*KFn)(const uint8_t*, const __half*, const uint8_t*, const __half2*, float*, int, int);
struct Var { const char* name; KFn fn; int wl, xl, rows_per_block; };
#define V(WL, XL, LPU, U, W, R) {#WL "/" #XL " lpu" #LPU " u" #U " w" #W " r" #R, gemv<WL, XL, LPU, U, W, R>, WL, XL, (8 / W) * R}

int main(int argc, char** argv) {
  Var vars[] = {
      V(0, 0, 4, 4, 1, 1), V(0, 0, 4, 2, 1, 1), V(0, 0, 4, 2, 4, 1), V(0, 0, 2, 2, 1, 1),
      V(1, 0, 4, 4, 1, 1), V(1, 0, 2, 4, 1, 1), V(1, 1, 2, 4, 1, 1), V(1, 1, 2, 2, 1, 1),
      V(1, 1, 1, 2, 1, 1), V(1, 1, 1, 4, 1, 1), V(1, 1, 2, 2, 1, 2), V(1, 1, 1, 2, 1, 2),
      V(1, 1, 1, 1, 1, 2), V(1, 1, 2, 2, 4, 1), V(1, 1, 1, 2, 4, 1), V(1, 1, 1, 2, 2, 1),
      V(1, 1, 4, 4, 1, 1), V(1, 1, 4, 2, 1, 2), V(1, 1, 1, 4, 2, 1), V(1, 1, 2, 4, 2, 1),
  };
  const int nv = sizeof(vars) / sizeof(vars[0]);
  int shapes[][2] = {{4096, 4096}, {1024, 4096}, {14336, 4096}, {4096, 14336}, {128256, 4096},
                     {576, 576}, {192, 576}, {1536, 576}, {576, 1536}};
  std::mt19937 rng(1);
  for (auto& sh : shapes) {
    const int N = sh[0], K = sh[1], NB = K / 32;
    const size_t wbytes = (size_t)N * NB * 18;
    int C = (int)std::min<size_t>(256, std::max<size_t>(4, (400ull << 20) / wbytes + 1));
    // host weights for copy 0 (others: same bytes, different buffers)
    std::vector<uint8_t> h(wbytes), hq((size_t)N * NB * 16);
    std::vector<__half> hd((size_t)N * NB);
    for (size_t b = 0; b < (size_t)N * NB; ++b) {
      const float dv = 0.001f + (rng() % 1000) * 1e-5f;
      const __half d = __float2half(dv);
      memcpy(&h[b * 18], &d, 2);
      hd[b] = d;
      for (int j = 0; j < 16; ++j) h[b * 18 + 2 + j] = hq[b * 16 + j] = rng() & 255;
    }
    std::vector<uint8_t> hx((size_t)NB * 36), hxq(K);
    std::vector<__half2> hxd(NB);
    for (int b = 0; b < NB; ++b) {
      const __half d = __float2half(0.01f + (rng() % 100) * 1e-4f);
      memcpy(&hx[b * 36], &d, 2);
      memcpy(&hx[b * 36 + 2], &d, 2);
      hxd[b] = __halves2half2(d, d);
      for (int j = 0; j < 32; ++j) hx[b * 36 + 4 + j] = hxq[b * 32 + j] = (uint8_t)(int8_t)((int)(rng() % 255) - 127);
    }
    std::vector<double> ref(N);
    for (int n = 0; n < N; ++n) {
      double s = 0;
      for (int b = 0; b < NB; ++b) {
        const double dw = __half2float(hd[(size_t)n * NB + b]), dx = __half2float(hxd[b].x);
        long si = 0;
        for (int j = 0; j < 16; ++j) {
          const int qb = hq[((size_t)n * NB + b) * 16 + j];
          si += ((qb & 15) - 8) * (int)(int8_t)hxq[b * 32 + j] + ((qb >> 4) - 8) * (int)(int8_t)hxq[b * 32 + 16 + j];
        }
        s += dw * dx * si;
      }
      ref[n] = s;
    }
    std::vector<uint8_t*> dw0(C), dw1(C);
    std::vector<__half*> dd(C);
    for (int c = 0; c < C; ++c) {
      CK(cudaMalloc(&dw0[c], wbytes)); CK(cudaMalloc(&dw1[c], hq.size())); CK(cudaMalloc(&dd[c], hd.size() * 2));
      CK(cudaMemcpy(dw0[c], h.data(), wbytes, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(dw1[c], hq.data(), hq.size(), cudaMemcpyHostToDevice));
      CK(cudaMemcpy(dd[c], hd.data(), hd.size() * 2, cudaMemcpyHostToDevice));
    }
    uint8_t *dx0, *dx1; __half2* dxd; float* dout;
    CK(cudaMalloc(&dx0, hx.size())); CK(cudaMalloc(&dx1, hxq.size())); CK(cudaMalloc(&dxd, NB * 4)); CK(cudaMalloc(&dout, N * 4));
    CK(cudaMemcpy(dx0, hx.data(), hx.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dx1, hxq.data(), hxq.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dxd, hxd.data(), NB * 4, cudaMemcpyHostToDevice));
    printf("shape n=%d k=%d weight %.2f MB, %d copies\n", N, K, wbytes / 1e6, C);
    cudaStream_t st; CK(cudaStreamCreate(&st));
    for (int v = 0; v < nv; ++v) {
      const Var& var = vars[v];
      const int grid = (N + var.rows_per_block - 1) / var.rows_per_block;
      if (N % var.rows_per_block != 0 && var.rows_per_block > 8) {}
      auto launch = [&](int c) {
        var.fn<<<grid, 256, 0, st>>>(var.wl ? dw1[c] : dw0[c], dd[c], var.xl ? dx1 : dx0, dxd, dout, N, NB);
      };
      CK(cudaMemsetAsync(dout, 0, N * 4, st));
      launch(0);
      CK(cudaStreamSynchronize(st));
      std::vector<float> o(N);
      CK(cudaMemcpy(o.data(), dout, N * 4, cudaMemcpyDeviceToHost));
      double err = 0, mag = 0;
      for (int n = 0; n < N; ++n) { err = std::max(err, std::fabs(o[n] - ref[n])); mag = std::max(mag, std::fabs(ref[n])); }
      const int L = std::max(64, C);
      cudaGraph_t gr; cudaGraphExec_t ge;
      CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
      for (int i = 0; i < L; ++i) launch(i % C);
      CK(cudaStreamEndCapture(st, &gr));
      CK(cudaGraphInstantiate(&ge, gr, 0));
      CK(cudaGraphLaunch(ge, st));
      cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
      const int reps = 5;
      CK(cudaEventRecord(e0, st));
      for (int r = 0; r < reps; ++r) CK(cudaGraphLaunch(ge, st));
      CK(cudaEventRecord(e1, st));
      CK(cudaEventSynchronize(e1));
      float ms; cudaEventElapsedTime(&ms, e0, e1);
      const double us = ms * 1e3 / (reps * L);
      printf("  %-22s %8.2f us %7.0f GB/s  err %.2e of %.2e\n", var.name, us, wbytes / us / 1e3, err, mag);
      cudaGraphExecDestroy(ge); cudaGraphDestroy(gr);
    }
    for (int c = 0; c < C; ++c) { cudaFree(dw0[c]); cudaFree(dw1[c]); cudaFree(dd[c]); }
    cudaFree(dx0); cudaFree(dx1); cudaFree(dxd); cudaFree(dout); cudaStreamDestroy(st);
  }
  return 0;
}

// CI without a GPU: the device decoders of quant_device.hpp (the element decoders of Dequantize
// and cuda.QGather, the unit decoders of cuda.QGemv) compiled for the host with shims for the
// CUDA intrinsics, run on random blocks of every weight type, give bitwise what
// blocks::dequantize gives: each element decoder's value, and each unit's a q_j + b (a0 for the
// first 16 values, a1 after; the types without a min: a q_j). The shims are exact (a byte
// permute, bit casts, IEEE f32 operations, the f16 conversion), so a wrong shift, mask, selector,
// offset or bias fails here; the GPU suite (quant_test.cpp) runs the same code on the device.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "luminal/core/blocks.hpp"
#include "luminal/cuda/quant_device.hpp"

namespace luminal {
namespace {

namespace fs = std::filesystem;

const char* kShim = R"(
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#define LMN inline
struct uint4 { unsigned int x, y, z, w; };
struct uint2 { unsigned int x, y; };
template <class T> inline T __ldg(const T* p) { T v; std::memcpy(&v, p, sizeof(T)); return v; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __uint_as_float(unsigned int u) { float f; std::memcpy(&f, &u, 4); return f; }
inline unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int s) {
  unsigned char b[8];
  std::memcpy(b, &x, 4);
  std::memcpy(b + 4, &y, 4);
  unsigned int r = 0;
  for (int i = 0; i < 4; ++i) r |= (unsigned int)b[(s >> (4 * i)) & 7] << (8 * i);
  return r;
}
inline float ldm_f16(unsigned short h) {  /* finite halves, exactly */
  const unsigned int sign = (unsigned int)(h & 0x8000u) << 16, e = (h >> 10) & 31u;
  unsigned int m = h & 0x3ffu;
  if (e != 0) return __uint_as_float(sign | ((e + 112) << 23) | (m << 13));
  if (m == 0) return __uint_as_float(sign);
  unsigned int x = 113;
  while ((m & 0x400u) == 0) { m <<= 1; --x; }
  return __uint_as_float(sign | (x << 23) | ((m & 0x3ffu) << 13));
}
)";

// Decodes `blocks` blocks read from argv[2] (type argv[1], 0..7 in kWeightBlockDTypes order) and
// writes, per value, the element decoder's float then the unit decoder's.
const char* kMain = R"(
template <class QT, class E>
int run(const char* in, const char* out, int n, int bs, E elem) {
  std::vector<unsigned char> bytes((size_t)n * QT::BB);
  FILE* f = std::fopen(in, "rb");
  if (!f || std::fread(bytes.data(), 1, bytes.size(), f) != bytes.size()) return 2;
  std::fclose(f);
  const int values = n * bs;
  std::vector<float> o((size_t)values * 2);
  for (int e = 0; e < values; ++e) o[2 * e] = elem(bytes.data() + (e / bs) * QT::BB, e % bs);
  for (int u = 0; u < values / 32; ++u) {
    typename QT::Raw r;
    QT::load(bytes.data(), u, r);
    float q[32], a0, a1, b;
    QT::dec(r, q, a0, a1, b);
    for (int j = 0; j < 32; ++j) {
      const float p = __fmul_rn(j < 16 ? a0 : a1, q[j]);
      o[2 * (u * 32 + j) + 1] = QT::HAS_B ? __fadd_rn(p, b) : p;
    }
  }
  f = std::fopen(out, "wb");
  if (!f || std::fwrite(o.data(), 4, o.size(), f) != o.size()) return 3;
  std::fclose(f);
  return 0;
}
int main(int argc, char** argv) {
  if (argc != 5) return 1;
  const int t = std::atoi(argv[1]), n = std::atoi(argv[4]);
  switch (t) {
    case 0: return run<QT_q4_0>(argv[2], argv[3], n, 32, lmn_deq_q4_0);
    case 1: return run<QT_q4_1>(argv[2], argv[3], n, 32, lmn_deq_q4_1);
    case 2: return run<QT_q5_0>(argv[2], argv[3], n, 32, lmn_deq_q5_0);
    case 3: return run<QT_q5_1>(argv[2], argv[3], n, 32, lmn_deq_q5_1);
    case 4: return run<QT_q8_0>(argv[2], argv[3], n, 32, lmn_deq_q8_0);
    case 5: return run<QT_q4_k>(argv[2], argv[3], n, 256, lmn_deq_q4_k);
    case 6: return run<QT_q5_k>(argv[2], argv[3], n, 256, lmn_deq_q5_k);
    case 7: return run<QT_q6_k>(argv[2], argv[3], n, 256, lmn_deq_q6_k);
  }
  return 1;
}
)";

/// Valid blocks with random quants, scales of random sign and size (a few subnormal) and mins.
std::vector<uint8_t> random_blocks(DType t, int blocks, uint64_t seed) {
  std::vector<uint8_t> b(static_cast<size_t>(blocks) * static_cast<size_t>(block_bytes(t)));
  blocks::fill_valid_blocks(t, b, seed);
  std::mt19937_64 rng(seed + 1);
  for (int k = 0; k < blocks; ++k) {
    uint8_t* p = b.data() + static_cast<size_t>(k) * static_cast<size_t>(block_bytes(t));
    const float mag =
        k % 13 == 0 ? 0x1p-20f : std::ldexp(1.0f + (rng() % 97) / 97.0f, -3 - (int)(rng() % 10));
    const uint16_t d = f32_to_f16_bits((rng() & 1) ? -mag : mag);
    const uint16_t m = f32_to_f16_bits(-0.01f * static_cast<float>(1 + rng() % 50));
    if (t == DType::Q6_K) {
      std::memcpy(p + 208, &d, 2);
      continue;
    }
    std::memcpy(p, &d, 2);
    if (t == DType::Q4_1 || t == DType::Q5_1 || t == DType::Q4_K || t == DType::Q5_K)
      std::memcpy(p + 2, &m, 2);
  }
  return b;
}

TEST(CudaQuantHost, DeviceDecodersMatchBlocksDequantizeBitwise) {
#ifndef LUMINAL_HOST_CXX
  GTEST_SKIP() << "no host compiler recorded";
#else
  const fs::path dir =
      fs::temp_directory_path() / ("luminal_quant_host_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream src(dir / "decoders.cpp");
    src << kShim << cuda::quant_device_source() << kMain;
  }
  const std::string exe = (dir / "decoders").string();
  const std::string cmd = std::string(LUMINAL_HOST_CXX) + " -std=c++17 -O1 -ffp-contract=off -w " +
                          (dir / "decoders.cpp").string() + " -o " + exe + " 2> " +
                          (dir / "cc.log").string();
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream log(dir / "cc.log");
    FAIL() << "host compile failed: " << std::string(std::istreambuf_iterator<char>(log), {});
  }
  int index = 0;
  for (DType t : kWeightBlockDTypes) {
    const int n = block_size(t) == 256 ? 24 : 192;
    const std::vector<uint8_t> bytes = random_blocks(t, n, 40 + static_cast<uint64_t>(index));
    const int values = n * block_size(t);
    std::vector<float> want(static_cast<size_t>(values));
    blocks::dequantize(t, bytes.data(), want.data(), values);
    {
      std::ofstream in(dir / "in.bin", std::ios::binary);
      in.write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
    }
    const std::string run = exe + " " + std::to_string(index++) + " " + (dir / "in.bin").string() +
                            " " + (dir / "out.bin").string() + " " + std::to_string(n);
    ASSERT_EQ(std::system(run.c_str()), 0) << name(t);
    std::vector<float> got(static_cast<size_t>(values) * 2);
    std::ifstream out(dir / "out.bin", std::ios::binary);
    out.read(reinterpret_cast<char*>(got.data()), static_cast<std::streamsize>(got.size() * 4));
    int bad_elem = 0, bad_unit = 0;
    for (int e = 0; e < values; ++e) {
      bad_elem +=
          std::memcmp(&got[2 * static_cast<size_t>(e)], &want[static_cast<size_t>(e)], 4) != 0;
      bad_unit +=
          std::memcmp(&got[2 * static_cast<size_t>(e) + 1], &want[static_cast<size_t>(e)], 4) != 0;
    }
    EXPECT_EQ(bad_elem, 0) << name(t) << ": element decoder";
    EXPECT_EQ(bad_unit, 0) << name(t) << ": unit decoder";
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
#endif
}

}  // namespace
}  // namespace luminal

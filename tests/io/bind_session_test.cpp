// Binding safetensors into a session: matching dtypes are used in place from the mapped file on
// the CPU (no bytes uploaded), converted tensors are uploaded once, and results are right.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/io/safetensors.hpp"
#include "luminal/runtime/session.hpp"

namespace luminal {
namespace {

TEST(BindSession, MatchingDtypesAreUsedInPlace) {
  std::vector<float> w(16), b(4);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = 0.25f * static_cast<float>(i) - 1.f;
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = static_cast<float>(i);
  std::vector<double> b64(b.begin(), b.end());
  std::vector<io::TensorView> ts{
      {"w", DType::F32, {4, 4}, {reinterpret_cast<const uint8_t*>(w.data()), 64}, ""},
      {"b", DType::F64, {4}, {reinterpret_cast<const uint8_t*>(b64.data()), 32}, ""}};
  const auto file = std::filesystem::temp_directory_path() / "luminal_bind_session.safetensors";
  io::write_safetensors(file, ts);
  auto weights = std::make_shared<const io::Weights>(io::Weights::open(file));

  Graph g;
  Tensor x = g.tensor("x", {2, 4});
  Tensor y = (x.matmul(g.tensor("w", {4, 4})) + g.tensor("b", {4})).output("y");
  cpu::CpuBackend cpu(1);
  Session s(g, cpu, CompileOptions().search_graph_limit(3).verbose(false));
  io::BindReport r = io::bind(s, weights);
  EXPECT_EQ(r.bound.size(), 2u);
  const io::TensorView& wt = weights->get("w");
  // w (f32 -> f32) is read in place when the file offset allows it; b (f64 -> f32) is converted
  // and uploaded: 16 bytes.
  if (reinterpret_cast<uintptr_t>(wt.bytes.data()) % 8 == 0) {
    EXPECT_EQ(s.buffer_address("w"), wt.bytes.data());
    EXPECT_EQ(s.stats().bytes_wrapped, 64u);
    EXPECT_EQ(s.stats().bytes_uploaded, 16u);
  } else {
    EXPECT_EQ(s.stats().bytes_uploaded, 64u + 16u);
  }
  weights.reset();  // the session keeps the mapping alive
  s.set(x, std::vector<float>{1, 0, 0, 0, 0, 1, 1, 0});
  s.execute();
  std::vector<float> want(8);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      const float x0 = i == 0 ? 1.f : 0.f, x1 = i == 0 ? 0.f : 1.f, x2 = i == 0 ? 0.f : 1.f;
      want[i * 4 + j] = x0 * w[0 * 4 + j] + x1 * w[1 * 4 + j] + x2 * w[2 * 4 + j] + b[j];
    }
  EXPECT_EQ(s.get<float>(y), want);
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace luminal

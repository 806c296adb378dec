// Load progress (io/progress.hpp): the meter's throttling, and the reports of a GGUF
// dequantisation and of binding weights into a CPU session: one stage each, done never
// decreasing, from 0 to done == total, with the stage's byte count as total.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "luminal/core/dtype.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/io/gguf_dequant.hpp"
#include "luminal/io/gguf_model.hpp"
#include "luminal/io/progress.hpp"
#include "luminal/io/safetensors.hpp"
#include "luminal/runtime/reference.hpp"
#include "luminal/runtime/session.hpp"
#include "support/test_data.hpp"

namespace luminal::io {
namespace {

namespace fs = std::filesystem;

struct Call {
  std::string stage;
  uint64_t done, total;
};

struct Recorder {
  std::vector<Call> calls;
  LoadProgress callback() {
    return [this](std::string_view stage, uint64_t done, uint64_t total) {
      calls.push_back({std::string(stage), done, total});
    };
  }
};

// One stage named `stage` of `total` bytes: starts at 0, never decreases, ends at total, and
// calls at most ProgressMeter::kSteps + 2 times.
void expect_one_stage(const std::vector<Call>& calls, const std::string& stage, uint64_t total) {
  ASSERT_GE(calls.size(), 2u);
  EXPECT_LE(calls.size(), ProgressMeter::kSteps + 2);
  EXPECT_EQ(calls.front().done, 0u);
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(calls[i].stage, stage) << "call " << i;
    EXPECT_EQ(calls[i].total, total) << "call " << i;
    if (i > 0) {
      EXPECT_GE(calls[i].done, calls[i - 1].done) << "call " << i;
    }
  }
  EXPECT_EQ(calls.back().done, total);
  for (size_t i = 0; i + 1 < calls.size(); ++i)
    EXPECT_LT(calls[i].done, total) << "total is reported once, last";
}

TEST(ProgressMeter, ThrottlesByBytes) {
  Recorder r;
  const LoadProgress fn = r.callback();
  {
    ProgressMeter m(fn, "stage", 1'000'000);
    for (int i = 0; i < 1'000'000; ++i)
      m.advance(1);
    m.finish();  // already at the total: no second report
  }
  expect_one_stage(r.calls, "stage", 1'000'000);
  EXPECT_GE(r.calls.size(), ProgressMeter::kSteps);
}

TEST(ProgressMeter, FinishReportsTheTotalAndClamps) {
  Recorder r;
  const LoadProgress fn = r.callback();
  ProgressMeter m(fn, "s", 100'000);
  m.advance(10);  // under one step (100000 / 128): not reported
  m.finish();
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[1].done, 100'000u);
  m.advance(5000);  // past the end: nothing more
  EXPECT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(m.done(), 100'000u);
}

TEST(ProgressMeter, NothingWithoutACallbackOrWork) {
  Recorder r;
  const LoadProgress fn = r.callback();
  ProgressMeter empty(fn, "s", 0);
  empty.advance(7);
  empty.finish();
  EXPECT_TRUE(r.calls.empty());
  ProgressMeter none(LoadProgress{}, "s", 100);  // no callback: no effect
  none.advance(50);
  none.finish();
}

TEST(LoadProgress, GgufDequantisation) {
  const fs::path models = testing::gguf_data_dir("models/expected.json") / "models";
  for (const char* name : {"llama3-f32.gguf", "llama3-f16.gguf", "qwen2-q8_0.gguf"}) {
    SCOPED_TRACE(name);
    Recorder r;
    GgufModelOptions o;
    o.tokenizer = false;
    o.progress = r.callback();
    const GgufModel m = read_gguf_model(models / name, o);
    uint64_t f32_bytes = 0;
    for (const std::string& t : m.weights->names())
      f32_bytes += m.weights->get(t).bytes.size();
    ASSERT_GT(f32_bytes, 0u);
    expect_one_stage(r.calls, "dequantising", f32_bytes);
  }
}

// A tensor over many chunks of the dequantisation (2^20 values each, not a multiple of it):
// reported chunk by chunk, with the same values as in one piece.
TEST(LoadProgress, DequantisationInChunks) {
  const uint64_t blocks = (uint64_t(5) << 20) / 32 + 7;  // Q8_0: 32 values, 34 bytes a block
  std::vector<uint8_t> data(blocks * 34);
  for (uint64_t b = 0; b < blocks; ++b) {
    const uint16_t d = f32_to_f16_bits(0.01f * static_cast<float>(b % 97 + 1));
    std::memcpy(&data[b * 34], &d, 2);
    for (int j = 0; j < 32; ++j)
      data[b * 34 + 2 + static_cast<uint64_t>(j)] = static_cast<uint8_t>(b * 31 + j * 7);
  }
  GgufTensor t;
  t.name = "big";
  t.type = GgmlType::Q8_0;
  t.shape = {static_cast<int64_t>(blocks), 32};
  t.size_bytes = data.size();
  t.data = data;
  const std::vector<float> whole = dequantize(t);

  Recorder r;
  const LoadProgress fn = r.callback();
  std::vector<float> chunked(whole.size());
  {
    ProgressMeter m(fn, "dequantising", chunked.size() * 4);
    dequantize_into(t, chunked, &m);
  }
  expect_one_stage(r.calls, "dequantising", chunked.size() * 4);
  EXPECT_GE(r.calls.size(), 6u);  // 0, then after each of the six chunks
  EXPECT_EQ(std::memcmp(whole.data(), chunked.data(), whole.size() * 4), 0);
}

TEST(LoadProgress, BindIntoACpuSession) {
  std::vector<float> w(64 * 64), unused(10);
  std::vector<double> b(64);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = static_cast<float>(i % 13) * 0.125f;
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = static_cast<double>(i);
  auto bytes = [](const auto& v) {
    return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()),
                                    v.size() * sizeof(v[0]));
  };
  const std::vector<TensorView> ts{{"w", DType::F32, {64, 64}, bytes(w), ""},
                                   {"b", DType::F64, {64}, bytes(b), ""},
                                   {"unused", DType::F32, {10}, bytes(unused), ""}};
  const fs::path file = fs::temp_directory_path() /
                        ("luminal_load_progress_" + std::to_string(::getpid()) + ".safetensors");
  write_safetensors(file, ts);
  auto weights = std::make_shared<const Weights>(Weights::open(file));
  const uint64_t total = 64 * 64 * 4 + 64 * 8;  // the bound tensors as stored ("unused": not)

  Graph g;
  Tensor x = g.tensor("x", {2, 64});
  (x.matmul(g.tensor("w", {64, 64})) + g.tensor("b", {64})).output("y");
  {
    cpu::CpuBackend cpu(1);
    Session s(g, cpu, CompileOptions().search_graph_limit(3).verbose(false));
    Recorder r;
    BindOptions o;
    o.progress = r.callback();
    const BindReport report = io::bind(s, weights, o);
    EXPECT_EQ(report.bound.size(), 2u);
    EXPECT_EQ(report.unused_tensors, std::vector<std::string>{"unused"});
    expect_one_stage(r.calls, "binding", total);
  }
  {
    ReferenceRuntime rt(g);  // the Runtime overload reports the same
    Recorder r;
    BindOptions o;
    o.progress = r.callback();
    io::bind(rt, *weights, o);
    expect_one_stage(r.calls, "binding", total);
  }
  fs::remove(file);
}

}  // namespace
}  // namespace luminal::io

// luminal/program/backend.hpp: what a device provides to the compiler and to sessions. This
// backend keeps its memory on the host and hands the rules, op support and plans to the CPU
// backend; a session compiles and runs on it as on any other.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"
#include "luminal/program/backend.hpp"
#include "luminal/runtime/session.hpp"
#include "snippet.hpp"

using namespace luminal;

class MyBackend : public Backend {
 public:
  std::string name() const override { return "my"; }
  std::vector<RuleSet> rulesets() const override { return cpu_.rulesets(); }  // its ops' rules
  bool executes(const OpDef* op) const override { return cpu_.executes(op); }
  std::unique_ptr<Plan> load(const LlirGraph& g, const PlanSpec& spec) override {
    return cpu_.load(g, spec);  // one program for one bucket
  }
  std::string device_key() const override { return "host"; }
  const OpDef* op_named(std::string_view name) const override { return cpu_.op_named(name); }

  // Its own memory: host memory, 256-byte aligned.
  Buffer allocate(uint64_t bytes) override {
    const uint64_t rounded = (bytes + 255) / 256 * 256;
    return Buffer{rounded ? std::aligned_alloc(256, rounded) : nullptr, bytes};
  }
  void release(Buffer b) override { std::free(b.ptr); }
  void upload(Buffer dst, uint64_t offset, const void* src, uint64_t bytes, Queue*) override {
    std::memcpy(static_cast<uint8_t*>(dst.ptr) + offset, src, bytes);
  }
  void download(void* dst, Buffer src, uint64_t offset, uint64_t bytes, Queue*) override {
    std::memcpy(dst, static_cast<const uint8_t*>(src.ptr) + offset, bytes);
  }
  void copy(Buffer dst, Buffer src, uint64_t bytes, Queue*) override {
    std::memcpy(dst.ptr, src.ptr, bytes);
  }
  void sync(Queue*) override {}  // everything has finished when a call returns

 private:
  cpu::CpuBackend cpu_{1};
};

int main() {
  Graph g;
  auto x = g.tensor("x", {4});
  (x * 3.0).output("y");
  MyBackend backend;
  Session s(g, backend, CompileOptions().search_graph_limit(2));
  s.compile();
  s.set(x, std::vector<float>{1, 2, 3, 4});
  s.execute();
  expect(s.get<float>("y") == std::vector<float>{3, 6, 9, 12}, "y = 3x on MyBackend");
}

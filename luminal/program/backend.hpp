#pragma once
// Backend: what a device provides to the compiler.
//
//   class MyBackend : public Backend {
//     std::string name() const override;                    // "cpu"
//     std::vector<RuleSet> rulesets() const override;       // its ops' rewrite rules, in order
//     bool executes(const OpDef* op) const override;        // ops it can run
//     std::unique_ptr<Executable> load(const LlirGraph&) override;   // compile one candidate
//   };
//
// An Executable is one loaded LLIR program (one per bucket once compiled). It runs with a dyn
// map over an IoTable: the user's input buffers by label (read; written only by in-place ops
// on carried inputs) and the output buffers by label (resized and filled).
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "luminal/program/llir.hpp"
#include "luminal/core/expr.hpp"
#include "luminal/egraph/rule.hpp"
#include "luminal/runtime/host_buffer.hpp"

namespace luminal {

struct IoTable {
  std::map<std::string, HostBuffer*, std::less<>> inputs;
  std::map<std::string, HostBuffer*, std::less<>> outputs;
  /// Filled by the executable: outputs whose value was written into an input's buffer
  /// (in-place update of a carried input): output label -> input label.
  std::map<std::string, std::string, std::less<>> output_in_input;
};

class Executable {
 public:
  virtual ~Executable() = default;
  /// Runs the program once. Throws luminal::Error on a missing input or bad dyn values.
  virtual void execute(const DynMap& dyn, IoTable& io) = 0;
  /// Bytes of working memory (arena and workspaces, not inputs/outputs) at these dims.
  virtual uint64_t memory_bytes(const DynMap& dyn) const = 0;
  /// Median seconds over `trials` runs; throws luminal::Error when one run exceeds `timeout_s`.
  /// The default times execute() with a steady clock (fine for synchronous backends).
  virtual double profile(const DynMap& dyn, IoTable& io, int trials, double timeout_s);
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  /// The backend's rewrite rules, run in this order after the core rules (each saturated).
  virtual std::vector<RuleSet> rulesets() const = 0;
  virtual bool executes(const OpDef* op) const = 0;
  /// Compiles a candidate. Throws luminal::Error when it cannot (the search rejects it).
  virtual std::unique_ptr<Executable> load(const LlirGraph& g) = 0;
};

}  // namespace luminal

#include "luminal/cuda/gemv_epilogue.hpp"

#include <vector>

#include "luminal/core/error.hpp"
#include "luminal/cuda/prelude.hpp"

namespace luminal::cuda {

GemvPrefetch gemv_epilogue_prefetch(const LlirNode& n, const FusedProgram& epi, Codegen& cg,
                                    int rows, const std::string& out_at) {
  std::vector<bool> read(n.attrs.views.size(), false);
  for (const FusedInst& in : epi.insts)
    if (in.op == FusedOpcode::Load && in.a > 0) {
      const size_t c = static_cast<size_t>(in.a) + 1;
      if (c >= n.attrs.views.size())
        throw Error(std::string(n.op->name) + ": the epilogue reads input " + std::to_string(c) +
                    " of a node with " + std::to_string(n.attrs.views.size()));
      read[c] = true;
    }
  GemvPrefetch p;
  std::string loads;
  for (size_t c = 2; c < read.size(); ++c) {
    if (!read[c]) continue;
    const std::string cs = std::to_string(c);
    p.decl +=
        "    S_" + dtype_tag(n.input_dtypes[c]) + " pf" + cs + "[" + std::to_string(rows) + "];\n";
    const std::string off = cg.view_offset(n.attrs.views[c], "fi", "e" + cs, loads);
    loads += "        pf" + cs + "[mi] = in" + cs + "[" + off + "];\n";
  }
  if (!loads.empty())
    p.load = "    if (lane == 0 && part == 0) {\n#pragma unroll\n      for (int mi = 0; mi < " +
             std::to_string(rows) + "; ++mi) {\n        const " + cg.idx() + " fi = " + out_at +
             ";\n" + loads + "      }\n    }\n";
  return p;
}

std::string gemv_store(const LlirNode& n, const FusedProgram* epi, const std::string& at,
                       const std::string& value) {
  if (!epi) return "out[" + at + "] = st_" + dtype_tag(n.attrs.dtype) + "(" + value + ");\n";
  std::string b = "{\n";
  const std::string r = emit_statements(*epi, b, [&](const FusedInst& in, size_t, bool keep) {
    if (in.a == 0)
      return load_fn(in.dtype, keep) + "(st_" + dtype_tag(in.dtype) + "(" + value + "))";
    return load_fn(in.dtype, keep) + "(pf" + std::to_string(in.a + 1) + "[mi])";
  });
  return b + "    out[" + at + "] = st_" + dtype_tag(n.attrs.dtype) + "(" + r + ");\n    }\n";
}

bool weight_prefetch(int64_t weight_bytes) {
  const int mib = env_int("LUMINAL_CUDA_PREFETCH", 4, 0, 1 << 20);
  return mib > 0 && weight_bytes < (int64_t{mib} << 20);
}

}  // namespace luminal::cuda

#include "luminal/cuda/q8_store.hpp"

#include <cstdint>
#include <optional>
#include <vector>

#include "luminal/core/error.hpp"
#include "luminal/cuda/quant_device.hpp"

namespace luminal::cuda {

bool reads_in_order(const View& v) {
  if (v.has_base()) return false;
  if (v.is_contiguous()) return true;
  constexpr int64_t kMaxChecked = int64_t{1} << 16;
  std::vector<int64_t> dims;
  int64_t count = 1;
  for (const Expr& d : v.dims) {
    if (!d.is_const() || d.as_const() < 0 || d.as_const() > kMaxChecked) return false;
    dims.push_back(d.as_const());
    count *= d.as_const();
    if (count > kMaxChecked) return false;
  }
  for (const Expr& s : v.strides)
    for (const std::string& name : s.vars())
      if (name != "z") return false;
  // Each axis' offsets once per index (the strides are functions of that axis' index alone).
  std::vector<std::vector<int64_t>> at(dims.size());
  try {
    for (size_t k = 0; k < dims.size(); ++k)
      for (int64_t i = 0; i < dims[k]; ++i)
        at[k].push_back(v.strides[k].eval({}, i));
  } catch (const Error&) {
    return false;  // (a stride that does not evaluate: not proven in order)
  }
  std::vector<int64_t> index(dims.size(), 0);
  for (int64_t flat = 0; flat < count; ++flat) {
    int64_t off = 0;
    for (size_t k = 0; k < dims.size(); ++k)
      off += at[k][static_cast<size_t>(index[k])];
    if (off != flat) return false;
    for (size_t k = dims.size(); k-- > 0;) {
      if (++index[k] < dims[k]) break;
      index[k] = 0;
    }
  }
  return true;
}

std::string q8_1_store(const std::string& value, const std::string& block, int64_t row_len,
                       bool split, const std::string& lane, const std::string& indent) {
  if (!split)
    return indent + "lmn_q8_1_warp(" + value + ", out + (long long)(" + block + ") * 36, " + lane +
           ");\n";
  const std::string nbr = std::to_string(row_len / 32);
  return indent + "{\n" + indent + "  const long long qb = (long long)(" + block + ");\n" + indent +
         "  unsigned char* qrow = out + (qb / " + nbr + ") * " + nbr + " * 36;\n" + indent +
         "  const int bi = (int)(qb % " + nbr + ");\n" + indent + "  lmn_q8_1_warp_to(" + value +
         ", qrow + bi * 32, qrow + " + nbr + " * 32 + bi * 4, " + lane + ");\n" + indent + "}\n";
}

std::string q8_1_store_value(const LlirNode& n, const std::string& value, const std::string& flat,
                             const std::string& lane, const std::string& indent) {
  const Shape& shape = n.attrs.shape;
  if (shape.empty() || !shape.back().is_const() || shape.back().as_const() % 32 != 0)
    throw Error(std::string(n.op->name) +
                ": writes q8_1 rows of a static length, a multiple of 32, not " +
                n.attrs.to_string());
  return indent + "{\n" + indent + "  const float v = " + value + ";\n" +
         q8_1_store("v", "(long long)(" + flat + ") / 32", shape.back().as_const(),
                    n.attrs.int_value == 1, lane, indent + "  ") +
         indent + "}";
}

Rule quantize_in_store_rule(std::string name, const OpDef* producer, const OpDef* fused, bool q8_k,
                            std::function<bool(const Attrs&, const std::vector<DType>&)> keep) {
  Pattern q = Pattern::any_op([](const OpDef* op) { return op == quantize_q8_op(); }).bind("q");
  return Rule{
      std::move(name), q, nullptr,
      [producer, fused, q8_k, keep = std::move(keep)](const Match& m, EGraph& eg) {
        const ENodeId qn = m.node("q");
        const Attrs qa = eg.attrs_of(qn);
        const bool k_blocks = q8_k && qa.dtype == DType::Q8_K;
        const int64_t bs = k_blocks ? 256 : 32;
        if ((qa.dtype != DType::Q8_1 && !k_blocks) || qa.shape.empty() ||
            !qa.shape.back().is_const() || qa.shape.back().as_const() % bs != 0 ||
            (k_blocks && qa.int_value != 0) || qa.views.size() != 1 || !reads_in_order(qa.views[0]))
          return;
        const ClassId c = eg.find(eg.node(qn).children[0]);
        if (!(numel(eg.shape(c)) == numel(qa.shape)) || !(qa.views[0].numel() == numel(qa.shape)))
          return;
        std::vector<ENodeId> found;
        for (ENodeId r : eg.nodes_of(c))
          if (!eg.is_removed(r) && eg.node(r).op == producer && eg.attrs_of(r).dtype == DType::F32)
            found.push_back(r);
        for (ENodeId r : found) {
          Attrs a = eg.attrs_of(r);
          const std::vector<ClassId> children = eg.node(r).children;
          a.dtype = qa.dtype;
          a.shape = qa.shape;
          a.int_value = qa.int_value;
          if (keep) {
            std::vector<DType> in;
            for (ClassId ch : children)
              in.push_back(eg.dtype(ch));
            if (!keep(a, in)) continue;
          }
          eg.merge(eg.add(fused, a, children), m.root);
        }
      }};
}

}  // namespace luminal::cuda

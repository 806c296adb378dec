#include "luminal/program/llir.hpp"

#include <algorithm>
#include <sstream>
#include <unordered_map>

#include "luminal/program/fold.hpp"

namespace luminal {

std::string LlirGraph::to_text() const {
  std::ostringstream os;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const LlirNode& n = nodes[i];
    os << "%" << i << " = " << n.op->name << "(";
    for (size_t k = 0; k < n.inputs.size(); ++k)
      os << (k ? ", " : "") << "%" << n.inputs[k];
    os << ") " << n.attrs.to_string() << "\n";
  }
  return os.str();
}

std::map<std::string, int> LlirGraph::op_mix() const {
  std::map<std::string, int> mix;
  for (const LlirNode& n : nodes) {
    if (is_op(n.op, OpKind::Input) || is_op(n.op, OpKind::Output)) continue;
    ++mix[std::string(n.op->name)];
  }
  return mix;
}

std::string LlirGraph::op_mix_string() const {
  auto mix = op_mix();
  std::vector<std::pair<std::string, int>> v(mix.begin(), mix.end());
  std::stable_sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.second > b.second; });
  std::string s;
  for (auto& [name, n] : v)
    s += (s.empty() ? "" : ", ") + std::to_string(n) + " " + name;
  return s.empty() ? "(no ops)" : s;
}

void LlirGraph::fill_input_dtypes() {
  for (LlirNode& n : nodes) {
    n.input_dtypes.clear();
    for (int i : n.inputs)
      n.input_dtypes.push_back(nodes.at(static_cast<size_t>(i)).attrs.dtype);
  }
}

LlirGraph to_llir(const SearchSpace& space, const Genome& g) {
  const EGraph& eg = space.egraph();
  LlirGraph out;
  std::unordered_map<ClassId, int> index;
  for (ClassId c : space.topo_order(g)) {
    const ENode& n = eg.node(space.chosen(g, c));
    LlirNode ln;
    // A folded value is read like any other input (its label says which fold computes it).
    ln.op = n.op == fold_op() ? hlir_op(OpKind::Input) : n.op;
    ln.attrs = eg.attrs(n.attr);
    for (ClassId ch : n.children) {
      ln.inputs.push_back(index.at(eg.find(ch)));
      ln.input_dtypes.push_back(eg.dtype(ch));
    }
    index[c] = static_cast<int>(out.nodes.size());
    out.nodes.push_back(std::move(ln));
  }
  return out;
}

}  // namespace luminal

#pragma once
// Test helpers: build small e-graphs with realistic attributes (dtype, shape, one view per child).
#include <algorithm>
#include <string>
#include <vector>

#include "luminal/core/shape.hpp"
#include "luminal/egraph/egraph.hpp"

namespace luminal::testing {

/// Attributes of an op writing `shape` of `dtype`, reading each child through `views`.
inline Attrs make_attrs(DType dtype, Shape shape, std::vector<View> views = {}) {
  Attrs a;
  a.dtype = dtype;
  a.shape = std::move(shape);
  a.views = std::move(views);
  return a;
}

/// How an op of output `out` reads a child of shape `in`: contiguous when the shapes agree, a
/// broadcast (stride 0) of a scalar otherwise.
inline View read_view(const Shape& in, const Shape& out) {
  if (in == out || !in.empty()) return View::contiguous(in);
  View v;
  v.dims = out;
  v.strides.assign(out.size(), Expr(0));
  return v;
}

inline ClassId input(EGraph& eg, const std::string& label, Shape shape = {4},
                     DType dtype = DType::F32, bool persist = false) {
  Attrs a = make_attrs(dtype, std::move(shape));
  a.label = label;
  a.persist = persist;
  return eg.add(hlir_op(OpKind::Input), a, {});
}

inline ClassId constant(EGraph& eg, double value, DType dtype = DType::F32) {
  Attrs a = make_attrs(dtype, {});
  a.value = value;
  return eg.add(hlir_op(OpKind::Constant), a, {});
}

/// An elementwise op (HLIR or backend) with the dtype and shape of its first non-scalar child.
inline ClassId ew(EGraph& eg, const OpDef* op, std::vector<ClassId> children) {
  Shape out = eg.shape(children.front());
  DType dt = eg.dtype(children.front());
  for (ClassId c : children) {
    if (!eg.shape(c).empty()) {
      out = eg.shape(c);
      dt = eg.dtype(c);
      break;
    }
  }
  std::vector<View> views;
  for (ClassId c : children)
    views.push_back(read_view(eg.shape(c), out));
  return eg.add(op, make_attrs(dt, out, std::move(views)), std::move(children));
}

inline ClassId ew(EGraph& eg, OpKind k, std::vector<ClassId> children) {
  return ew(eg, hlir_op(k), std::move(children));
}

/// The single live e-node of a class with this op.
inline ENodeId node_with(const EGraph& eg, ClassId c, const OpDef* op) {
  for (ENodeId n : eg.nodes_of(c))
    if (eg.node(n).op == op) return n;
  return static_cast<ENodeId>(-1);
}
inline ENodeId node_with(const EGraph& eg, ClassId c, OpKind k) {
  return node_with(eg, c, hlir_op(k));
}

/// Classes reachable from `roots` through live e-nodes, ascending.
inline std::vector<ClassId> reachable_classes(const EGraph& eg, const std::vector<ClassId>& roots) {
  std::vector<char> seen(eg.num_nodes(), 0);  // class ids are below num_nodes()
  std::vector<ClassId> stack, out;
  for (ClassId r : roots)
    stack.push_back(eg.find(r));
  while (!stack.empty()) {
    ClassId c = stack.back();
    stack.pop_back();
    if (seen[c]) continue;
    seen[c] = 1;
    out.push_back(c);
    for (ENodeId n : eg.nodes_of(c))
      for (ClassId ch : eg.node(n).children)
        stack.push_back(eg.find(ch));
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// True when the graph class -> child classes of its live e-nodes, over the reachable classes,
/// has no cycle; then every choice of one e-node per class is acyclic (a simple cycle of classes
/// picks one e-node per class, so any cycle there is some choice's cycle). Iterative DFS.
inline bool live_class_graph_acyclic(const EGraph& eg, const std::vector<ClassId>& roots) {
  std::vector<int> state(eg.num_nodes(), 0);  // 0 unvisited, 1 on the path, 2 done
  struct Frame {
    ClassId c;
    std::vector<ClassId> next;
  };
  for (ClassId start : reachable_classes(eg, roots)) {
    if (state[start] != 0) continue;
    std::vector<Frame> path;
    auto open = [&](ClassId c) {
      state[c] = 1;
      Frame f{c, {}};
      for (ENodeId n : eg.nodes_of(c))
        for (ClassId ch : eg.node(n).children)
          f.next.push_back(eg.find(ch));
      path.push_back(std::move(f));
    };
    open(start);
    while (!path.empty()) {
      if (path.back().next.empty()) {
        state[path.back().c] = 2;
        path.pop_back();
        continue;
      }
      ClassId d = path.back().next.back();
      path.back().next.pop_back();
      if (state[d] == 1) return false;
      if (state[d] == 0) open(d);
    }
  }
  return true;
}

}  // namespace luminal::testing

#include "luminal/ir/graph.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <unordered_map>

#include "luminal/core/error.hpp"
#include "luminal/ir/tensor.hpp"

namespace luminal {

struct GraphData {
  std::vector<Node> nodes;
  // Inputs' and outputs' labels (never changed once added): find() and the uniqueness checks
  // without a scan of every node (a Python session looks outputs up by label at every get).
  std::unordered_map<std::string, NodeId> input_labels, output_labels;
  DynMap dims;
  Facts declared;
  std::vector<std::pair<NodeId, NodeId>> carried;
  std::vector<Graph::Alternative> alternatives;
};

Graph::Graph() : data_(std::make_shared<GraphData>()) {}

const std::vector<Node>& Graph::nodes() const { return data_->nodes; }

const Node& Graph::node(NodeId id) const {
  LUMINAL_ASSERT(id >= 0 && id < static_cast<NodeId>(data_->nodes.size()), "node id out of range");
  return data_->nodes[id];
}

Node& Graph::mutable_node(NodeId id) {
  LUMINAL_ASSERT(id >= 0 && id < static_cast<NodeId>(data_->nodes.size()), "node id out of range");
  return data_->nodes[id];
}

namespace {

std::vector<NodeId> nodes_of(const std::vector<Node>& nodes, OpKind op) {
  std::vector<NodeId> out;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].op == op) out.push_back(static_cast<NodeId>(i));
  return out;
}

void check_label(const std::unordered_map<std::string, NodeId>& used, OpKind op,
                 const std::string& label) {
  if (label.empty()) throw Error(std::string(op_name(op)) + ": the label must not be empty");
  if (used.count(label)) {
    throw Error(std::string(op_name(op)) + " label '" + label +
                "' is already used in this graph; labels of inputs and of outputs must be unique");
  }
}

void check_dim_name(std::string_view name, std::string_view where) {
  if (name == "z") {
    throw Error(std::string(where) +
                ": 'z' is reserved for the index variable of stride expressions; give the " +
                "dynamic dimension another name");
  }
}

}  // namespace

std::vector<NodeId> Graph::outputs() const { return nodes_of(data_->nodes, OpKind::Output); }
std::vector<NodeId> Graph::inputs() const { return nodes_of(data_->nodes, OpKind::Input); }

void Graph::carry(const Tensor& output, const Tensor& input) {
  const Node& out = node(output.id());
  const Node& in = node(input.id());
  if (out.op != OpKind::Output)
    throw Error("carry: the first tensor must be an output (call .output(\"label\") on it)");
  if (in.op != OpKind::Input)
    throw Error("carry: the second tensor must be a graph input, got " +
                std::string(op_name(in.op)));
  if (out.dtype != in.dtype || out.shape != in.shape) {
    throw Error("carry: output '" + out.label + "' (" + std::string(name(out.dtype)) + " " +
                shape_to_string(out.shape) + ") and input '" + in.label + "' (" +
                std::string(name(in.dtype)) + " " + shape_to_string(in.shape) +
                ") must have the same dtype and shape");
  }
  for (auto [o, i] : data_->carried) {
    if (i == input.id() || o == output.id())
      throw Error("carry: '" + node(o).label + "' -> '" + node(i).label + "' is already declared");
  }
  data_->carried.emplace_back(output.id(), input.id());
}

const std::vector<std::pair<NodeId, NodeId>>& Graph::carried() const { return data_->carried; }

void Graph::alternative(const Tensor& primary, const Tensor& alt,
                        std::optional<std::pair<Expr, int64_t>> at_most) {
  auto check = [&](const Tensor& t, const char* which) {
    const Node& n = node(t.id());
    if (n.op == OpKind::Input || n.op == OpKind::Output || n.op == OpKind::Constant)
      throw Error(std::string("alternative: the ") + which + " is " + std::string(op_name(n.op)) +
                  "; both must be computed values");
    const View& v = t.view();
    if (!v.is_contiguous() || v.has_base() || !(v.numel() == numel(n.shape)))
      throw Error(std::string("alternative: the ") + which +
                  " must be a whole node read contiguously (make it one, e.g. with + 0), got " +
                  v.to_string());
    return &n;
  };
  const Node* p = check(primary, "primary");
  const Node* a = check(alt, "alternative");
  if (primary.id() == alt.id()) throw Error("alternative: a tensor is its own alternative");
  if (p->dtype != a->dtype || p->shape != a->shape)
    throw Error("alternative: the primary (" + std::string(name(p->dtype)) + " " +
                shape_to_string(p->shape) + ") and the alternative (" +
                std::string(name(a->dtype)) + " " + shape_to_string(a->shape) +
                ") must have the same dtype and shape");
  data_->alternatives.push_back({primary.id(), alt.id(), std::move(at_most)});
}

const std::vector<Graph::Alternative>& Graph::alternatives() const { return data_->alternatives; }

NodeId Graph::find(std::string_view label) const {
  // The first node of the label (an input and an output may share one).
  const std::string key(label);
  const auto in = data_->input_labels.find(key);
  const auto out = data_->output_labels.find(key);
  if (in != data_->input_labels.end() || out != data_->output_labels.end()) {
    const NodeId id = out == data_->output_labels.end() ? in->second
                      : in == data_->input_labels.end() ? out->second
                                                        : std::min(in->second, out->second);
    // (mutable_node() must not change an input's or output's label: the index would be stale.)
    LUMINAL_ASSERT(data_->nodes[id].label == label, "a labelled node's label changed");
    return id;
  }
  std::string known;
  for (const Node& n : data_->nodes) {
    if (n.op != OpKind::Input && n.op != OpKind::Output) continue;
    known += (known.empty() ? "" : ", ") + n.label;
  }
  throw Error("no input or output named '" + std::string(label) +
              "' in this graph (known: " + (known.empty() ? std::string("none") : known) + ")");
}

NodeId Graph::add_node(Node n) {
  const NodeId id = static_cast<NodeId>(data_->nodes.size());
  for (const Operand& in : n.inputs) {
    LUMINAL_ASSERT(in.node >= 0 && in.node < id, "operand refers to a later node");
  }
  if (n.op == OpKind::Input || n.op == OpKind::Output) {
    auto& used = n.op == OpKind::Input ? data_->input_labels : data_->output_labels;
    check_label(used, n.op, n.label);
    used.emplace(n.label, id);
  }
  data_->nodes.push_back(std::move(n));
  return id;
}

Tensor Graph::tensor(std::string_view label, const std::vector<Dim>& shape, DType dtype) {
  Node n;
  n.op = OpKind::Input;
  n.label = std::string(label);
  n.dtype = dtype;
  n.shape = to_shape(shape);
  for (const Expr& d : n.shape)
    if (d.has_var("z")) check_dim_name("z", "tensor '" + n.label + "'");
  if (is_block(dtype)) {
    const int bs = block_size(dtype);
    if (n.shape.empty() || !n.shape.back().is_const() || n.shape.back().as_const() % bs != 0)
      throw Error("graph.tensor: '" + n.label + "' is " + std::string(name(dtype)) +
                  ": its rows (the last dim, " +
                  (n.shape.empty() ? std::string("none") : n.shape.back().to_string()) +
                  ") must have a fixed length that is a multiple of " + std::to_string(bs));
    for (const Expr& d : n.shape)
      if (!d.is_const())
        throw Error("graph.tensor: '" + n.label + "' is " + std::string(name(dtype)) +
                    ": a block-quantized tensor needs a static shape (got " +
                    shape_to_string(n.shape) + ")");
  }
  NodeId id = add_node(n);
  return Tensor(*this, id, View::contiguous(data_->nodes[id].shape), dtype);
}

Tensor Graph::constant(double value, DType dtype) {
  Node n;
  n.op = OpKind::Constant;
  n.dtype = dtype;
  if (is_integer(dtype)) {
    // Any integral int64 value; it wraps to the dtype's width like integer arithmetic does.
    if (!(value == std::trunc(value) && value >= -0x1p63 && value < 0x1p63)) {
      throw Error("constant " + std::to_string(value) +
                  " is not an integer in the 64-bit range; it cannot be a " +
                  std::string(name(dtype)) + " constant");
    }
    n.int_value = static_cast<int64_t>(value);
  }
  n.value = dtype == DType::Bool ? (value != 0 ? 1.0 : 0.0) : value;
  NodeId id = add_node(n);
  return Tensor(*this, id, View::contiguous({}), dtype);
}

Tensor Graph::full(const std::vector<Dim>& shape, double value, DType dtype) {
  return constant(value, dtype).expand(shape);
}

Tensor Graph::zeros(const std::vector<Dim>& shape, DType dtype) { return full(shape, 0, dtype); }
Tensor Graph::ones(const std::vector<Dim>& shape, DType dtype) { return full(shape, 1, dtype); }

Tensor Graph::iota(Expr expr, Dim n) {
  Node node;
  node.op = OpKind::Iota;
  node.dtype = DType::I32;
  node.iota_expr = expr;
  node.iota_len = n.e;
  node.shape = {n.e};
  NodeId id = add_node(node);
  return Tensor(*this, id, View::contiguous({n.e}), DType::I32);
}

Tensor Graph::arange(Dim n, DType dtype) {
  Tensor t = iota(Expr::z(), n);
  return dtype == DType::I32 ? t : t.cast(dtype);
}

Tensor Graph::arange(Dim n, double start, double step, DType dtype) {
  Tensor t = arange(n, is_float(dtype) ? dtype : DType::I64);
  if (is_float(dtype)) return t * step + start;
  if (start != static_cast<double>(static_cast<int64_t>(start)) ||
      step != static_cast<double>(static_cast<int64_t>(step))) {
    throw Error("arange: start and step must be integers for " + std::string(name(dtype)));
  }
  return (t * step + start).cast(dtype);
}

void Graph::set_dim(std::string_view name, int64_t value) {
  check_dim_name(name, "set_dim");
  auto it = data_->declared.find(name);
  if (it != data_->declared.end() && !it->second.contains(value)) {
    throw Error("set_dim: " + std::string(name) + " = " + std::to_string(value) +
                " is outside its declared range [" + std::to_string(it->second.lo) + ", " +
                std::to_string(it->second.hi) + "]");
  }
  data_->dims[std::string(name)] = value;
}

const DynMap& Graph::dims() const { return data_->dims; }

void Graph::declare_dim(std::string_view name, int64_t min, int64_t max) {
  if (min > max) {
    throw Error("declare_dim: range [" + std::to_string(min) + ", " + std::to_string(max) +
                "] for " + std::string(name) + " is empty; give min <= max");
  }
  (void)Expr::var(name);  // validates the name
  check_dim_name(name, "declare_dim");
  data_->declared[std::string(name)] = Interval{min, max};
}

Interval Graph::dim_range(std::string_view name) const {
  auto it = data_->declared.find(name);
  return it != data_->declared.end() ? it->second : Interval{0, INT32_MAX};
}

Facts Graph::dim_facts() const {
  Facts f;
  auto add = [&](const Expr& e) {
    for (const std::string& v : e.vars()) {
      if (v == "z") continue;
      auto it = data_->declared.find(v);
      f[v] = it != data_->declared.end() ? it->second : Interval{0, INT32_MAX};
    }
  };
  for (const Node& n : data_->nodes) {
    for (const Expr& d : n.shape)
      add(d);
    for (const Operand& o : n.inputs) {
      for (const Expr& d : o.view.dims)
        add(d);
      for (const Expr& s : o.view.strides)
        add(s);
      add(o.view.base);
    }
    if (n.op == OpKind::Iota) add(n.iota_expr);
  }
  return f;
}

namespace {

std::string attrs_text(const Node& n) {
  std::ostringstream os;
  switch (n.op) {
    case OpKind::Input:
    case OpKind::Output: os << " \"" << n.label << "\"" << (n.persist ? " persist" : ""); break;
    case OpKind::Constant:
      if (is_integer(n.dtype))
        os << " " << n.int_value;
      else
        os << " " << n.value;
      break;
    case OpKind::Iota: os << " expr=" << n.iota_expr << " len=" << n.iota_len; break;
    case OpKind::SumReduce:
    case OpKind::MaxReduce: os << " axis=" << n.axis; break;
    default: break;
  }
  return os.str();
}

}  // namespace

std::string Graph::to_text() const {
  std::ostringstream os;
  for (size_t i = 0; i < data_->nodes.size(); ++i) {
    const Node& n = data_->nodes[i];
    os << "%" << i << " = " << op_name(n.op) << attrs_text(n) << "(";
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const Operand& in = n.inputs[k];
      os << (k ? ", " : "") << "%" << in.node;
      if (!in.view.is_contiguous() || in.view.dims != data_->nodes[in.node].shape)
        os << " {" << in.view.to_string() << "}";
    }
    os << ") : " << name(n.dtype) << shape_to_string(n.shape) << "\n";
  }
  return os.str();
}

std::string Graph::to_dot() const {
  std::ostringstream os;
  os << "digraph luminal {\n  node [shape=box, fontname=\"monospace\"];\n";
  for (size_t i = 0; i < data_->nodes.size(); ++i) {
    const Node& n = data_->nodes[i];
    std::string label = std::string(op_name(n.op)) + attrs_text(n);
    std::string escaped;
    for (char c : label) {
      if (c == '"' || c == '\\') escaped += '\\';
      escaped += c;
    }
    os << "  n" << i << " [label=\"%" << i << " " << escaped << "\\n"
       << name(n.dtype) << shape_to_string(n.shape) << "\"];\n";
    for (const Operand& in : n.inputs)
      os << "  n" << in.node << " -> n" << i << ";\n";
  }
  os << "}\n";
  return os.str();
}

}  // namespace luminal

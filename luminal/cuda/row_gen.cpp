#include "luminal/cuda/row_gen.hpp"

#include <algorithm>
#include <cmath>

#include "luminal/cuda/prelude.hpp"

namespace luminal::cuda::rows {

std::string RowGen::chunk_loop(const std::string& body) const {
  return "#pragma unroll\n    for (int k = 0; k < " + std::to_string(K) + "; ++k) {\n      const " +
         I() + " l0 = ((" + I() + ")threadIdx.x + (" + I() + ")k * " + std::to_string(T) + ") * " +
         std::to_string(V) + ";\n      if (l0 < L) {\n" + body + "      }\n    }\n";
}

std::vector<int> RowGen::closure(const std::vector<int>& targets) const {
  std::vector<bool> need(prog.insts.size(), false);
  std::vector<int> stack(targets.begin(), targets.end());
  while (!stack.empty()) {
    const int j = stack.back();
    stack.pop_back();
    if (need[j] || uniform[j]) continue;
    need[j] = true;
    const FusedInst& in = prog.insts[j];
    const int a = arity(in.op);
    if (a > 0) stack.push_back(in.a);
    if (a > 1) stack.push_back(in.b);
    if (a > 2) stack.push_back(in.c);
  }
  std::vector<int> out;
  for (size_t j = 0; j < need.size(); ++j)
    if (need[j]) out.push_back(static_cast<int>(j));
  return out;
}

std::string RowGen::element_code(const std::vector<int>& order) {
  std::string body;
  for (int j : order) {
    const FusedInst& in = prog.insts[j];
    const std::string ct = "C_" + dtype_tag(in.dtype);
    std::string rhs;
    if (in.op == FusedOpcode::Load) {
      const int c = in.a;
      if (chunked_form() && cached[c] >= 0) {
        const std::string st = "S_" + dtype_tag(in.dtype);
        rhs = load_fn(in.dtype, keep[j]) + "(reinterpret_cast<const " + st + "*>(&c" +
              std::to_string(c) + "[k])[j])";
      } else if (use_cache && cached[c] >= 0) {
        rhs = "c" + std::to_string(c) + "[k]";
      } else if (chunked_form() && chunked[c]) {
        const std::string st = "S_" + dtype_tag(in.dtype);
        rhs = load_fn(in.dtype, keep[j]) + "(reinterpret_cast<const " + st + "*>(&q" +
              std::to_string(c) + ")[j])";
      } else {
        const std::string off = cg.view_offset(views[c], "i", "o" + std::to_string(c), body);
        rhs = load_fn(in.dtype, keep[j]) + "(" + this->in(c) + "[" + off + "])";
      }
    } else {
      rhs = inst_code(in, keep[j]);
    }
    body += "      const " + ct + " v" + std::to_string(j) + " = " + rhs + ";\n";
  }
  return body;
}

std::string RowGen::chunk_loads(const std::vector<int>& order) {
  if (!chunked_form()) return {};
  std::vector<bool> done(chunked.size(), false);
  std::string head;
  for (int j : order) {
    const FusedInst& in = prog.insts[j];
    if (in.op != FusedOpcode::Load) continue;
    const int c = in.a;
    if (cached[c] >= 0 || !chunked[c] || done[c]) continue;
    done[c] = true;
    if (head.empty()) head = "      const " + I() + " i0 = rb + l0;\n";
    const std::string vt = vector_type(V * size_bytes(n.input_dtypes.at(c)));
    const std::string off = cg.view_offset(views[c], "i0", "w" + std::to_string(c), head);
    head += "      const " + vt + " q" + std::to_string(c) + " = *reinterpret_cast<const " + vt +
            "*>(" + this->in(c) + " + " + off + ");\n";
  }
  return head;
}

std::string RowGen::loop(const std::string& inner, const std::string& chunk_head,
                         const std::string& chunk_tail) {
  if (chunked_form()) {
    return chunk_loop(chunk_head + "#pragma unroll\n      for (int j = 0; j < " +
                      std::to_string(V) + "; ++j) {\n      const " + I() +
                      " l = l0 + j;\n      const " + I() + " i = rb + l;\n" + inner + "      }\n" +
                      chunk_tail);
  }
  if (use_cache) {
    return "#pragma unroll\n    for (int k = 0; k < " + std::to_string(K) +
           "; ++k) {\n      const " + I() + " l = (" + I() + ")threadIdx.x + (" + I() + ")k * " +
           std::to_string(T) + ";\n      if (l < L) {\n      const " + I() + " i = rb + l;\n" +
           inner + "      }\n    }\n";
  }
  return "    for (" + I() + " l = threadIdx.x; l < L; l += " + std::to_string(T) +
         ") {\n      const " + I() + " i = rb + l;\n" + inner + "    }\n";
}

Levels levels(const FusedProgram& p, const std::function<bool(int child)>& uniform_load) {
  const size_t N = p.insts.size();
  Levels lv;
  lv.uniform.assign(N, false);
  lv.stage.assign(N, 0);
  for (size_t j = 0; j < N; ++j) {
    const FusedInst& in = p.insts[j];
    const int a = arity(in.op);
    const int ops[3] = {in.a, in.b, in.c};
    if (in.op == FusedOpcode::Load) {
      lv.uniform[j] = uniform_load(in.a);
    } else if (in.op == FusedOpcode::Const) {
      lv.uniform[j] = true;
    } else if (is_row_reduce(in.op)) {
      lv.uniform[j] = true;
      lv.stage[j] = lv.stage[in.a] + 1;
      lv.passes = std::max(lv.passes, lv.stage[j]);
    } else {
      bool u = true;
      for (int k = 0; k < a; ++k) {
        u = u && lv.uniform[ops[k]];
        lv.stage[j] = std::max(lv.stage[j], lv.stage[ops[k]]);
      }
      lv.uniform[j] = u;
    }
  }
  lv.reds.resize(static_cast<size_t>(lv.passes) + 1);
  for (size_t j = 0; j < N; ++j)
    if (is_row_reduce(p.insts[j].op)) lv.reds[lv.stage[j]].push_back(static_cast<int>(j));
  return lv;
}

std::optional<Online> match_online(const FusedProgram& p, const std::vector<std::vector<int>>& reds,
                                   const std::vector<bool>& uniform) {
  if (reds.size() != 3 || reds[1].size() != 1 || reds[2].size() != 1) return std::nullopt;
  Online o;
  o.m = reds[1][0];
  o.s = reds[2][0];
  const auto& I = p.insts;
  if (I[o.m].op != FusedOpcode::RowMax || I[o.s].op != FusedOpcode::RowSum ||
      I[o.s].dtype != DType::F32)
    return std::nullopt;
  o.u = I[o.m].a;
  o.e = I[o.s].a;
  auto is = [&](int j, FusedOpcode op) { return I[j].op == op && I[j].dtype == DType::F32; };
  // Either operand order of a commutative instruction: the one that is `want`, and the other.
  auto split = [&](int j, auto want) -> std::optional<std::pair<int, int>> {
    if (want(I[j].a)) return std::pair{I[j].a, I[j].b};
    if (want(I[j].b)) return std::pair{I[j].b, I[j].a};
    return std::nullopt;
  };
  auto is_const = [&](int j, double v) {
    return I[j].op == FusedOpcode::Const && I[j].dtype == DType::F32 && I[j].value == v;
  };
  if (!is(o.u, I[o.u].op) || !is(o.m, FusedOpcode::RowMax) || !is(o.e, FusedOpcode::Exp2))
    return std::nullopt;
  o.scaled = I[o.e].a;
  if (!is(o.scaled, FusedOpcode::Mul)) return std::nullopt;
  // The scale must be a positive finite f32 constant: the running form skips -inf elements and
  // -inf maxima as adding 0, which is exp2(-inf * c) only for c > 0.
  auto sc = split(o.scaled, [&](int j) {
    return I[j].op == FusedOpcode::Const && uniform[j] && I[j].dtype == DType::F32 &&
           I[j].value > 0 && std::isfinite(I[j].value);
  });
  if (!sc) return std::nullopt;
  o.c = sc->first;
  o.diff = sc->second;
  if (!is(o.diff, FusedOpcode::Add)) return std::nullopt;
  auto d = split(o.diff, [&](int j) { return j == o.u; });
  if (!d) return std::nullopt;
  o.neg = d->second;
  if (!is(o.neg, FusedOpcode::Mul)) return std::nullopt;
  auto ng = split(o.neg, [&](int j) { return j == o.m; });
  if (!ng || !is_const(ng->second, -1.0)) return std::nullopt;
  return o;
}

}  // namespace luminal::cuda::rows

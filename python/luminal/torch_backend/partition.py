"""Split an ATen FX graph into luminal pieces and eager nodes.

A probe conversion (convert.Converter with probe=True) finds the nodes that convert; torch's
CapabilityBasedPartitioner groups them into acyclic partitions; each partition with real work in
it becomes a piece.Piece (a submodule of the returned GraphModule), and every other node stays in
the graph, run by PyTorch eager between the pieces.
"""

import warnings

import torch
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupport
from torch.fx.passes.utils.fuser_utils import fuse_by_partitions

from .convert import Converter
from .piece import Piece
from . import replay

# Ops that move or relabel data only: a partition of nothing else runs in eager.
_NO_WORK = {
    "aten.view.default",
    "aten._unsafe_view.default",
    "aten.reshape.default",
    "aten.permute.default",
    "aten.expand.default",
    "aten.unsqueeze.default",
    "aten.squeeze.dim",
    "aten.squeeze.dims",
    "aten.squeeze.default",
    "aten.slice.Tensor",
    "aten.select.int",
    "aten.t.default",
    "aten.transpose.int",
    "aten.clone.default",
    "aten.alias.default",
    "aten.detach.default",
    "aten.sym_size.int",
    "aten.split.Tensor",
    "aten.split_with_sizes.default",
    "aten.unbind.int",
}

warned = set()  # the sets of fallback ops already warned about


def op_name(target):
    """'aten.mm.default' for an ATen/prims op, the function's name otherwise ('add')."""
    if isinstance(target, torch._ops.OpOverload):
        return str(target)
    return getattr(target, "__name__", str(target))


def _has_work(nodes):
    return any(
        n.op == "call_function" and op_name(n.target) not in _NO_WORK and not _is_size(n)
        for n in nodes
    )


def _is_size(n):
    return not isinstance(n.meta.get("val"), torch.Tensor) and not isinstance(
        n.meta.get("val"), (list, tuple)
    )


class _Support(OperatorSupport):
    def __init__(self, supported):
        super().__init__()
        self.supported = supported

    def is_node_supported(self, submodules, node):
        return node in self.supported


def split(gm, backend, options, dim_range, static_inputs, report):
    """A function running the graph with its convertible partitions replaced by compiled
    pieces (the rest in eager)."""
    for n in gm.graph.nodes:
        if n.op == "get_attr" and "val" not in n.meta:
            v = getattr(gm, n.target, None)
            if isinstance(v, torch.Tensor):
                n.meta["val"] = v  # shape and dtype for the probe and the pieces' inputs
    probe = Converter(gm, device=backend.device_type, probe=True, dim_range=dim_range).build()
    fallback = {}
    for node, why in probe.reasons.items():
        if _is_size(node) and not isinstance(node.meta.get("val"), torch.SymInt):
            continue
        fallback.setdefault(op_name(node.target), why)
    if fallback and not options.fallback:
        raise RuntimeError(
            "torch.compile(backend='luminal'): no conversion for "
            + ", ".join(f"{k} ({v})" for k, v in sorted(fallback.items()))
            + "; options={'fallback': True} runs them in eager PyTorch"
        )
    partitioner = CapabilityBasedPartitioner(
        gm, _Support(probe.supported), allows_single_node_partition=True
    )
    parts = [p for p in partitioner.propose_partitions() if _has_work(p.nodes)]
    graph_dims = {}
    eager = {}
    in_parts = set().union(*[set(p.nodes) for p in parts]) if parts else set()
    for n in gm.graph.nodes:
        if n.op == "call_function" and n not in in_parts:
            name = op_name(n.target)
            eager[name] = eager.get(name, 0) + 1
    fused = fuse_by_partitions(gm, [dict.fromkeys(p.nodes) for p in parts], always_return_tuple=True)
    pieces = []
    for node in list(fused.graph.nodes):
        if node.op != "call_module" or not node.target.startswith("fused_"):
            continue
        sub = getattr(fused, node.target)
        persist = set()
        subs = [p for p in sub.graph.nodes if p.op == "placeholder"]
        for i, (ph, arg) in enumerate(zip(subs, node.args)):
            if isinstance(arg, torch.fx.Node) and arg in static_inputs:
                persist.add(i)
        piece = Piece(sub, backend, options, dim_range, report.stats, persist, graph_dims)
        setattr(fused, node.target, piece)
        pieces.append(piece)
    fused.recompile()
    report.add_graph(pieces, fallback, eager)

    def run(*args):
        graph_dims.clear()
        graph_dims.update(probe.dim_values(args))
        outs = fused(*args)
        if replay.calls is not None:
            replay.record(run, args, outs)
        return outs

    if fallback:
        names = tuple(sorted(fallback))
        if names not in warned:
            warned.add(names)
            warnings.warn(
                "luminal: these ops run in PyTorch eager between compiled pieces: "
                + ", ".join(f"{k} ({v})" for k, v in sorted(fallback.items())),
                stacklevel=2,
            )
    return run

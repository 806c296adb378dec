"""Converters for the ops that sort and group rows: what a mixture of experts in transformers
(its grouped_mm experts, the default under torch.compile) does with each token's chosen experts.
sort, histc in its counting form and the grouped matmul (transformers' grouped_mm_fallback and
aten._grouped_mm; empty_permuted is ops_shape's, with empty). The grouped matmul reads each row's expert matrix by id, the
form the library's expert matmul kernels match (docs/moe.md), never every expert for every row.
"""

import torch

from .table import Unsupported, _cast, _lt, op

aten = torch.ops.aten


def _sort_args(node, args, kwargs):
    """(dim, descending) of sort.default (positional) or sort.stable (keywords)."""
    if node.target == aten.sort.default:
        dim = args[0] if len(args) > 0 else kwargs.get("dim", -1)
        descending = args[1] if len(args) > 1 else kwargs.get("descending", False)
    else:
        dim, descending = kwargs.get("dim", -1), kwargs.get("descending", False)
    return dim, descending


# The longest fixed-length axis sorted in the graph: the library's argsort compares every pair
# of the axis (n^2 work and, unfused, an [n, n] buffer), so a vocabulary's 32,000 logits (top-p
# sampling) sort in eager. An axis of dynamic length (a mixture of experts' token-expert rows)
# sorts in the graph at every length: splitting the model there would cost more at the lengths
# that matter (decode: k rows), and its pairs grow with the prompt.
MAX_SORTED = 4096


def check_pairwise(size, what):
    if isinstance(size, int) and size > MAX_SORTED:
        raise Unsupported(
            f"{what} of {size} elements along its axis (sorted by comparing every pair: past "
            f"{MAX_SORTED} eager sorts faster)"
        )


@op(aten.sort.default, aten.sort.stable)
def _sort(cx, node, a, *args, **kwargs):
    """(values, indices). Equal values keep their order (torch's stable sort; its default sort
    leaves their order open, so any order of equal keys is one of its results). Fixed axes
    longer than MAX_SORTED stay in eager."""
    dim, descending = _sort_args(node, args, kwargs)
    dim %= max(a.ndim, 1)
    if a.ndim:
        check_pairwise(a.shape[dim], "a sort")
    idx = a.argsort(dim, bool(descending))
    return [a.gather_elements(dim, idx), _cast(idx, "i64")]


def _integral(n):
    """Whether fx node n is a tensor of an integer dtype."""
    val = n.meta.get("val") if isinstance(n, torch.fx.Node) else None
    return isinstance(val, torch.Tensor) and not val.is_floating_point() and not val.is_complex()


def _integer_source(n):
    """Whether fx node n holds integers: an integer tensor (transformers' histc input on CUDA),
    or one converted to float (on the CPU, whose histc takes floats only)."""
    if _integral(n):
        return True
    if not isinstance(n, torch.fx.Node):
        return False
    if n.target not in (torch.ops.prims.convert_element_type.default, aten._to_copy.default):
        return False
    return _integral(n.args[0])


def _histc_args(node):
    a = node.args
    bins = a[1] if len(a) > 1 else node.kwargs.get("bins", 100)
    lo = a[2] if len(a) > 2 else node.kwargs.get("min", 0)
    hi = a[3] if len(a) > 3 else node.kwargs.get("max", 0)
    return bins, lo, hi


def _check_histc(node):
    bins, lo, hi = _histc_args(node)
    if not lo < hi:
        return "histc over the values' own range (min >= max)"
    if lo != int(lo) or hi != int(hi) or bins != int(hi) - int(lo) + 1:
        return "histc with bins other than one for each integer of [min, max]"
    if not _integer_source(node.args[0]):
        return "histc of values that are not integers"
    return None


@op(aten.histc.default, check=_check_histc)
def _histc(cx, node, a, *args, **kwargs):
    """Counts of integer values (or integers cast to float) with one bin for each integer of
    [min, max] (transformers' tokens per expert): bin b counts the values equal to min + b.
    torch's bins are (max - min) / bins wide and the last one closed, so an integer v in [min,
    max] falls in bin v - min, at least 1 / bins from either edge; values outside are not
    counted."""
    bins, lo, _ = _histc_args(node)
    bins, lo = int(bins), int(lo)
    dt = _lt(cx.dtype(node))
    x = a.flatten() if a.ndim != 1 else a
    edges = cx.g.arange(bins, "i32")
    if lo:
        edges = edges + lo
    hits = x.reshape([x.shape[0], 1]).eq(_cast(edges, a.dtype).reshape([1, bins]))
    return _cast(hits, "i32").sum(0).cast(dt)


def _grouped_args(node):
    """(x, w, offs) of a grouped matmul node, offs given by position or by name."""
    a = list(node.args)
    offs = a[2] if len(a) > 2 else node.kwargs.get("offs")
    return a[0], a[1], offs


def _check_grouped(node):
    x, w, offs = _grouped_args(node)
    vals = [n.meta.get("val") if isinstance(n, torch.fx.Node) else None for n in (x, w, offs)]
    if any(not isinstance(v, torch.Tensor) for v in vals):
        return "grouped_mm without tensor arguments"
    if (vals[0].dim(), vals[1].dim(), vals[2].dim()) != (2, 3, 1):
        return "grouped_mm other than rows [S, K] by expert matrices [E, K, N] with offsets [E]"
    if node.target == aten._grouped_mm.default:
        extra = list(node.args[3:]) + [node.kwargs.get("bias"), node.kwargs.get("out_dtype")]
        if any(e is not None for e in extra):
            return "_grouped_mm with a bias or an out_dtype"
    return None


def _grouped_targets():
    t = [aten._grouped_mm.default] if hasattr(aten, "_grouped_mm") else []
    custom = getattr(torch.ops, "transformers", None)
    try:
        t.append(custom.grouped_mm_fallback.default)
    except AttributeError:
        pass  # transformers not imported (or older): its op is not in this graph either
    return t


def register_grouped_mm():
    """Registers the grouped matmul for the ops that exist now (transformers' custom op exists
    once transformers' MoE integration is imported; convert.py calls this per graph)."""
    for t in _grouped_targets():
        op(t, check=_check_grouped)(_grouped_mm)


def _grouped_mm(cx, node, x, w, offs=None, *args, **kwargs):
    """Rows x [S, K] sorted by group, w [E, K, N], offs [E] the groups' cumulative row ends: row
    i is x[i] @ w[g] for the group g whose rows hold it (the count of ends at or below i); rows
    past the last end are zero. Each row reads its expert's matrix by id (an embedding of whole
    matrices), as nn::expert_linear does."""
    if offs is None:
        offs = kwargs["offs"]
    S, K = x.shape
    E, _, N = w.shape
    rows = cx.g.arange(S, "i64").reshape([S, 1])
    ends = _cast(offs, "i64").reshape([1, E])
    gid = _cast(rows >= ends, "i32").sum(1)  # [S]
    valid = gid < float(E)
    gid = gid.clamp(0, E - 1)
    xr = _cast(x, w.dtype).reshape([S, 1, K])
    wv = node.args[1].meta["val"]
    if wv.transpose(-2, -1).is_contiguous():  # w is [E, N, K] memory read transposed (a Linear's)
        mats = w.transpose(1, 2).reshape([E, N * K]).embedding(gid).reshape([S, N, K])
        out = xr.matmul(mats.transpose(1, 2))
    else:
        mats = w.reshape([E, K * N]).embedding(gid).reshape([S, K, N])
        out = xr.matmul(mats)
    out = out.reshape([S, N])
    return valid.reshape([S, 1]).where(out, 0.0)

"""The conversion table, continued: matmul, movement, creation, indexing and size ops.

Converters as in ops.py (``fn(cx, node, *args, **kwargs)``).
"""

import operator

import torch

from .table import (
    CONVERTERS,
    Unsupported,
    _add_size,
    _cast,
    _lt,
    _mul_size,
    _size_tensor,
    op,
)

aten = torch.ops.aten


# ---- matmul ----


@op(aten.mm.default, aten.bmm.default)
def _mm(cx, node, a, b):
    return a.matmul(b)


@op(aten.addmm.default)
def _addmm(cx, node, bias, a, b, beta=1, alpha=1):
    y = a.matmul(b)
    if alpha != 1:
        y = y * float(alpha)
    return y + (bias if beta == 1 else bias * float(beta))


# ---- movement ----


@op(aten.view.default, aten._unsafe_view.default, aten.reshape.default)
def _view(cx, node, a, shape):
    return a.reshape(cx.shape(node))


@op(aten.expand.default)
def _expand(cx, node, a, shape, implicit=False):
    return a.expand(cx.shape(node))


@op(aten.permute.default)
def _permute(cx, node, a, dims):
    return a.permute([d % a.ndim for d in dims])


@op(aten.t.default)
def _t(cx, node, a):
    return a if a.ndim < 2 else a.transpose(0, 1)


@op(aten.transpose.int)
def _transpose(cx, node, a, d0, d1):
    return a.transpose(d0, d1)


@op(aten.unsqueeze.default)
def _unsqueeze(cx, node, a, dim):
    return a.unsqueeze(dim % (a.ndim + 1))


@op(aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default)
def _squeeze(cx, node, a, dims=None):
    return a.reshape(cx.shape(node))


def _from_start(start, size):
    """A slice's start counted from the axis' start (a negative one counts from its end; on a
    dynamic axis torch's length of the result says it was not clamped)."""
    if isinstance(start, int) and start < 0:
        return max(start + size, 0) if isinstance(size, int) else f"({size}) - {-start}"
    return start


@op(aten.slice.Tensor)
def _slice(cx, node, a, dim=0, start=None, end=None, step=1):
    dim %= a.ndim
    size = a.shape[dim]
    start = 0 if start is None else start
    n = cx.shape(node)[dim]  # torch's length (it knows the sizes' ranges; luminal may not)
    if n == size and step == 1:
        return a
    start = _from_start(start, size)
    if n == 0:  # nothing (Phi-3's pass-through half of a rope over the whole head)
        return a.slice(dim, 0, 0)
    last = (n - 1) * step if isinstance(n, int) else f"(({n}) - 1) * {step}"
    end = _add_size(_add_size(start, last), 1)
    r = a.slice(dim, start, end, step)
    got = str(r.shape[dim])
    clamped = "min(" in got or "max(" in got
    if isinstance(n, str) and isinstance(start, str) and clamped and "min(" not in n:
        # luminal clamps a length torch proved in bounds (a start from an integer input, Falcon's
        # -logits_to_keep): the rows read by index, exactly n of them, so later views agree
        at = cx.g.arange(n, "i64")
        if step != 1:
            at = at * cx.g.constant(float(step), "i64")
        return a.index_select(dim, at + _size_tensor(cx, start))
    return r


@op(aten.select.int)
def _select(cx, node, a, dim, index):
    dim %= a.ndim
    if isinstance(index, int) and index < 0:
        size = a.shape[dim]
        if not isinstance(size, int):
            raise Unsupported("a negative index on a dynamic axis")
        index += size
    return a.slice(dim, index, f"({index}) + 1" if isinstance(index, str) else index + 1).squeeze(
        dim
    )


@op(aten.cat.default)
def _cat(cx, node, tensors, dim=0):
    dt = _lt(cx.dtype(node))
    ts = [_cast(t, dt) for t in tensors if not _empty(cx, t)]
    if not ts:
        raise Unsupported("cat of empty tensors")
    if len(ts) == 1:
        return ts[0]
    import luminal

    return luminal.concat(ts, dim % ts[0].ndim)


def _empty(cx, t):
    return any(d == 0 for d in t.shape)


@op(aten.split.Tensor, aten.split_with_sizes.default)
def _split(cx, node, a, sizes, dim=0):
    dim %= a.ndim
    total = a.shape[dim]
    if isinstance(sizes, int):
        if not isinstance(total, int):
            raise Unsupported("split of a dynamic axis")
        sizes = [min(sizes, total - i) for i in range(0, total, sizes)]
    out, start = [], 0
    for s in sizes:
        out.append(a.slice(dim, start, _add_size(start, s)))
        start = _add_size(start, s)
    return out


@op(aten.unbind.int)
def _unbind(cx, node, a, dim=0):
    dim %= a.ndim
    if not isinstance(a.shape[dim], int):
        raise Unsupported("unbind of a dynamic axis")
    return [a.slice(dim, i, i + 1).squeeze(dim) for i in range(a.shape[dim])]


@op(operator.getitem)
def _getitem(cx, node, seq, i):
    if not isinstance(seq, (list, tuple)):
        raise Unsupported("getitem of a non-sequence")
    return seq[i]


@op(aten.constant_pad_nd.default)
def _pad(cx, node, a, pad, value=0):
    if any(not isinstance(p, int) or p < 0 for p in pad):
        raise Unsupported("negative or dynamic padding")
    # pad: (left, right) pairs from the last axis backwards.
    for i in range(0, len(pad), 2):
        axis = a.ndim - 1 - i // 2
        left, right = pad[i], pad[i + 1]
        if left or right:
            parts = []
            dt = a.dtype
            if left:
                shape = list(a.shape)
                shape[axis] = left
                parts.append(cx.g.full(shape, float(value), dt))
            parts.append(a)
            if right:
                shape = list(a.shape)
                shape[axis] = right
                parts.append(cx.g.full(shape, float(value), dt))
            import luminal

            a = luminal.concat(parts, axis)
    return a


# ---- creation ----


def _check_creation(node):
    dev = node.kwargs.get("device")
    return None if dev is None or torch.device(dev).type in ("cpu", "cuda") else f"device {dev}"


@op(aten.arange.start_step, aten.arange.start, aten.arange.default, check=_check_creation)
def _arange(cx, node, *args, **kw):
    args = list(args)
    start, end, step = 0, None, 1
    if node.target == aten.arange.default:
        end = args[0]
    else:
        start, end = args[0], args[1]
        if len(args) > 2:
            step = args[2]
    if isinstance(start, str) or isinstance(step, str):
        raise Unsupported("arange with a dynamic start or step")
    n = cx.shape(node)[0]
    dt = _lt(cx.dtype(node))
    out = _cast(cx.g.arange(n, dt if dt in ("i32", "i64") else "i32"), dt)
    if step != 1:
        out = out * step
    return out + start if start else out


@op(aten.full.default, check=_check_creation)
def _full(cx, node, size, value, **kw):
    return cx.g.full(cx.shape(node), float(value), _lt(cx.dtype(node)))


@op(aten.scalar_tensor.default, check=_check_creation)
def _scalar_tensor(cx, node, value, **kw):
    return cx.g.full([], float(value), _lt(cx.dtype(node)))


@op(aten.zeros_like.default, aten.ones_like.default, aten.full_like.default)
def _like(cx, node, a, *args, **kw):
    v = {aten.zeros_like.default: 0.0, aten.ones_like.default: 1.0}.get(node.target)
    if v is None:
        v = float(args[0])
    return cx.g.full(cx.shape(node), v, _lt(cx.dtype(node)))


@op(aten.repeat.default)
def _repeat(cx, node, a, repeats):
    """Tiles a: each axis i (leading ones added for extra repeats) becomes r_i copies of it, as
    a broadcast over a new axis before it, merged."""
    shape = [1] * (len(repeats) - a.ndim) + list(a.shape)
    x = a.reshape(shape)
    tiled, merged = [], []
    for r, d in zip(repeats, shape):
        tiled += [r, d]
        merged.append(_mul_size(r, d))
    x = x.reshape([v for d in shape for v in (1, d)]).expand(tiled)
    return x.reshape(merged)


@op(aten.empty.memory_format, aten.empty_permuted.default, check=_check_creation)
def _empty_new(cx, node, size, *args, **kw):
    """An uninitialised tensor: zeros (whatever reads it writes it first)."""
    return cx.g.full(cx.shape(node), 0.0, _lt(cx.dtype(node)))


@op(aten.copy.default)
def _copy(cx, node, dst, src, non_blocking=False):
    """The functional copy: src in dst's dtype, broadcast to dst's shape."""
    out = _cast(src, _lt(cx.dtype(node)))
    shape = cx.shape(node)
    return out if list(out.shape) == list(shape) else out.expand(shape)


def _check_slice_scatter(node):
    step = node.args[5] if len(node.args) > 5 else node.kwargs.get("step", 1)
    return None if step == 1 else "slice_scatter with a step"


@op(aten.slice_scatter.default, check=_check_slice_scatter)
def _slice_scatter(cx, node, a, src, dim=0, start=None, end=None, step=1):
    """a with a[start:end] along dim replaced by src: the parts around it concatenated with src
    (DeepSeek's q assembled from its rope and no-rope halves)."""
    dim %= a.ndim
    size = a.shape[dim]
    n = cx.shape(node.args[1])[dim]  # src's length: torch's clamped end - start
    start = _from_start(0 if start is None else start, size)
    end = _add_size(start, n)
    parts = [a.slice(dim, 0, start)] if start != 0 else []
    parts.append(_cast(src, a.dtype))
    if not (isinstance(end, int) and isinstance(size, int) and end >= size):
        parts.append(a.slice(dim, end, size))
    import luminal

    return parts[0] if len(parts) == 1 else luminal.concat(parts, dim)


# ---- indexing ----


@op(aten.embedding.default)
def _embedding(cx, node, weight, ids, padding_idx=-1, *rest):
    return weight.embedding(ids)


@op(aten.index_select.default)
def _index_select(cx, node, a, dim, index):
    return a.index_select(dim % a.ndim, index)


@op(aten.gather.default)
def _gather(cx, node, a, dim, index, sparse_grad=False):
    return a.gather_elements(dim % a.ndim, index)


def _check_index(node):
    idx = node.args[1]
    if all(i is None for i in idx):
        return "index without an index tensor"
    for i in idx:
        if i is not None and i.meta["val"].dtype == torch.bool:
            return "boolean-mask indexing"
    return None


@op(aten.index.Tensor, check=_check_index)
def _index(cx, node, a, indices):
    """x[..., i0, i1, ...] with integer index tensors (broadcast together) on any axes, sliced
    (None) ones between or around them. As torch: the index's dims replace the indexed axes
    where those are adjacent, and lead otherwise. The indexed axes are moved to the front and
    read there (_index_leading)."""
    axes = [k for k, i in enumerate(indices) if i is not None]
    if axes == list(range(len(axes))):
        return _index_leading(cx, a, indices[: len(axes)], cx.shape(node))
    out = cx.shape(node)
    nd = len(out) - (a.ndim - len(axes))  # the index's dims
    others = [d for d in range(a.ndim) if d not in axes]
    moved = a.permute(*(axes + others))
    adjacent = axes == list(range(axes[0], axes[-1] + 1))
    p = axes[0] if adjacent else 0  # where torch puts the index's dims
    lead = out[p : p + nd] + out[:p] + out[p + nd :]
    r = _index_leading(cx, moved, [indices[k] for k in axes], lead)
    if p == 0:
        return r
    return r.permute(*(list(range(nd, nd + p)) + list(range(nd)) + list(range(nd + p, len(out)))))


def _index_leading(cx, a, indices, out_shape):
    """a[i0, i1, ...] with integer index tensors over the leading axes, as out_shape."""
    k = len(indices)
    lin, stride = None, 1
    for axis in range(k - 1, -1, -1):
        size = a.shape[axis]
        if size != 1:  # an index into a size-1 axis is 0
            i = _cast(indices[axis], "i64")
            if isinstance(size, int):
                i = (i < 0).where(i + size, i)
            term = i if stride == 1 else i * _size_tensor(cx, stride)
            lin = term if lin is None else lin + term
        stride = _mul_size(stride, size)
    if lin is None:
        lin = _cast(indices[0], "i64") * 0
    rest = list(a.shape[k:])
    if not rest:
        return a.gather_flat(lin).reshape(out_shape)
    flat = a.reshape([stride] + rest)
    return flat.index_select(0, lin.flatten()).reshape(out_shape)


def _index_tensors(node):
    """index_put's / index_copy's index arguments: [(axis, fx node)] of the non-None entries."""
    if node.target == aten.index_copy.default:
        return [(node.args[1], node.args[2])]
    return [(k, i) for k, i in enumerate(node.args[1]) if i is not None]


def _check_index_put(node):
    if node.target == aten.index_put.default:
        acc = node.args[3] if len(node.args) > 3 else node.kwargs.get("accumulate", False)
        if acc:
            return "index_put with accumulate=True"
    idx = _index_tensors(node)
    if not idx:
        return "index_put without an index tensor"
    axes = [k for k, _ in idx]
    if axes != list(range(axes[0], axes[-1] + 1)):
        return "index_put with index tensors on axes that are not adjacent"
    vals = [i.meta["val"] for _, i in idx]
    if any(v.dtype == torch.bool or v.is_floating_point() for v in vals):
        return "index_put with a boolean-mask or float index"
    if len({str(tuple(v.shape)) for v in vals}) != 1:
        return "index_put with index tensors of different shapes"
    return None


@op(aten.index_put.default, aten.index_copy.default, check=_check_index_put)
def _index_put(cx, node, a, *args):
    """A copy of a with a[..., i0, i1, ..., ...] = values (the index tensors on adjacent axes,
    sliced axes around them), as one scatter at flat indexes: torch's functional index_put (what
    an in-place `cache[:, :, pos] = kv` becomes) and index_copy."""
    if node.target == aten.index_copy.default:
        dim, index, values = args
        dim %= a.ndim
        indices = [None] * dim + [index]
        ix_node = node.args[2]
    else:
        indices, values = args[0], args[1]
        ix_node = next(i for i in node.args[1] if i is not None)
    shape = list(a.shape)
    axes = [k for k, i in enumerate(indices) if i is not None]
    first, last = axes[0], axes[-1]
    ishape = list(cx.shape(ix_node))
    tail = shape[last + 1 :]
    out = shape[:first] + ishape + tail  # the shape values are broadcast to
    strides, st = [1] * len(shape), 1
    for k in range(len(shape) - 1, -1, -1):
        strides[k] = st
        st = _mul_size(st, shape[k])

    def placed(t, at, rank):
        """t (rank `rank`) as axes at..at + rank - 1 of `out`, broadcast over the rest."""
        dims = [1] * at + list(t.shape) + [1] * (len(out) - at - rank)
        return t.reshape(dims).expand(out)

    def term(t, k):
        return t if strides[k] == 1 else t * _size_tensor(cx, strides[k])

    flat = None
    for k in list(range(first)) + list(range(last + 1, len(shape))):
        at = k if k < first else k - (last + 1) + first + len(ishape)
        iota = placed(cx.g.arange(shape[k], "i64"), at, 1)
        flat = term(iota, k) if flat is None else flat + term(iota, k)
    for k in axes:
        i = _cast(indices[k], "i64")
        if isinstance(shape[k], int):
            i = (i < 0).where(i + shape[k], i)
        t = term(placed(i, first, len(ishape)), k)
        flat = t if flat is None else flat + t
    if values.ndim < len(out):
        values = values.reshape([1] * (len(out) - values.ndim) + list(values.shape))
    return a.scatter_flat(flat, _cast(values.expand(out), a.dtype))


def _check_copy_(node):
    dst = node.args[0]
    if not isinstance(dst, torch.fx.Node) or dst.op != "placeholder":
        return "copy_ into a value the graph computes"
    val = dst.meta.get("val")
    if not isinstance(val, torch.Tensor) or not val.is_contiguous():
        return "copy_ into an input that is not contiguous"
    if sum(1 for u in dst.users if u.target == aten.copy_.default) > 1:
        return "copy_ into one input twice"
    return None


@op(aten.copy_.default, check=_check_copy_)
def _copy_(cx, node, dst, src, non_blocking=False):
    """An input the graph mutates: AOTAutograd (keep_inference_input_mutations) ends the graph
    with copy_(input, new value), for an in-place cache write (`cache[:, pos] = k`, index_copy_).
    The new value becomes carried state (Graph.carry): the piece binds the input's memory and
    the session leaves the value there, written in place where the program updates it in place
    (Converter.mutate, piece.Piece)."""
    value = _cast(src, dst.dtype)
    shape = cx.shape(node.args[0])
    if list(value.shape) != list(shape):
        value = value.expand(shape)
    cx.mutate(node.args[0], value)
    return dst


@op(aten.scatter.src, aten.scatter.value)
def _scatter(cx, node, a, dim, index, src):
    if not hasattr(src, "shape"):
        src = cx.g.full(cx.shape(node.args[2]), float(src), a.dtype)
    return a.scatter_elements(dim % a.ndim, index, _cast(src, a.dtype))


# ---- sizes (SymInt arithmetic) ----


@op(aten.sym_size.int)
def _sym_size(cx, node, a, dim):
    return a.shape[dim]


def _size_op(sym):
    def fn(cx, node, a, b):
        return f"({a}) {sym} ({b})"

    return fn


CONVERTERS[operator.add] = _size_op("+")
CONVERTERS[operator.sub] = _size_op("-")
CONVERTERS[operator.mul] = _size_op("*")
CONVERTERS[operator.floordiv] = _size_op("//")
CONVERTERS[operator.neg] = lambda cx, node, a: f"(0 - ({a}))"

"""The conversion table: one function per core ATen op, building luminal tensors.

Each converter is called as ``fn(cx, node, *args, **kwargs)`` with the FX node's arguments
mapped: tensor values are ``luminal.Tensor``, sizes are ints or size strings ("s0", "2*s0"),
everything else is as FX recorded it. ``cx`` (convert.Converter) gives the node's torch dtype and
shape (``cx.dtype(node)``, ``cx.shape(node)``) and the graph (``cx.g``). A converter may raise
``Unsupported`` while building; the partitioner then leaves the node to eager PyTorch.
Elementwise, dtype and reduction ops are here; matmul, movement, creation, indexing and size ops
in ops_shape.py; the table and the helpers both use in table.py.
"""

import torch

from .ops_group import check_pairwise
from .table import (
    CHECKS,
    CONVERTERS,
    Unsupported,
    _cast,
    _lt,
    _mul_size,
    _size_tensor,
    op,
)

aten = torch.ops.aten
prims = torch.ops.prims


def _scalar(v):
    return isinstance(v, (int, float, bool)) and not isinstance(v, str)


def _binary(cx, node, a, b, fn, compute=None):
    """fn(a, b) with both operands in the compute dtype (the output's unless given)."""
    dt = _lt(compute or cx.dtype(node))
    if _scalar(a) and _scalar(b):
        raise Unsupported("both operands are scalars")
    if _scalar(a):
        a = cx.g.constant(float(a), dt)
    if _scalar(b):
        b = cx.g.constant(float(b), dt)
    if isinstance(a, str):  # a dynamic size as an operand
        a = _size_tensor(cx, a).cast(dt)
    if isinstance(b, str):
        b = _size_tensor(cx, b).cast(dt)
    return fn(_cast(a, dt), _cast(b, dt))


def _promoted(cx, node):
    """The dtype torch computes a comparison of a and b in."""
    ts = [cx.dtype(n) for n in node.args[:2] if isinstance(n, torch.fx.Node)]
    dt = ts[0]
    for t in ts[1:]:
        dt = torch.promote_types(dt, t)
    return dt


# ---- elementwise ----


@op(aten.add.Tensor, aten.add.Scalar)
def _add(cx, node, a, b, alpha=1):
    if alpha != 1:
        b = b * alpha if _scalar(b) else _binary(cx, node, b, alpha, lambda x, y: x * y)
    return _binary(cx, node, a, b, lambda x, y: x + y)


@op(aten.sub.Tensor, aten.sub.Scalar)
def _sub(cx, node, a, b, alpha=1):
    if alpha != 1:
        b = b * alpha if _scalar(b) else _binary(cx, node, b, alpha, lambda x, y: x * y)
    return _binary(cx, node, a, b, lambda x, y: x - y)


@op(aten.rsub.Scalar, aten.rsub.Tensor)
def _rsub(cx, node, a, b, alpha=1):
    return _sub(cx, node, b, a, alpha)


@op(aten.mul.Tensor, aten.mul.Scalar)
def _mul(cx, node, a, b):
    return _binary(cx, node, a, b, lambda x, y: x * y)


@op(aten.div.Tensor, aten.div.Scalar, aten.true_divide.Tensor, aten.true_divide.Scalar)
def _div(cx, node, a, b):
    if _scalar(b) and not _scalar(a) and not isinstance(a, str):
        # The library's division by a Python number: the scalar in the dtype's compute type (f32
        # for 16-bit floats, as torch), and a multiplication by the reciprocal where that is exact
        # (a power of two: attention's 1/sqrt(64)) instead of the emulated true division.
        return _cast(a, _lt(cx.dtype(node))) / float(b)
    return _binary(cx, node, a, b, lambda x, y: x / y)


def _check_div_mode(node):
    mode = node.kwargs.get("rounding_mode", node.args[2] if len(node.args) > 2 else None)
    return None if mode in (None, "trunc", "floor") else f"rounding_mode={mode}"


@op(aten.div.Tensor_mode, aten.div.Scalar_mode, check=_check_div_mode)
def _div_mode(cx, node, a, b, rounding_mode=None):
    if rounding_mode is None:
        return _div(cx, node, a, b)
    fdt = torch.float64 if cx.dtype(node) in (torch.int64, torch.float64) else torch.float32
    q = _binary(cx, node, a, b, lambda x, y: x / y, compute=fdt)
    if rounding_mode == "floor":
        r = q - q.remainder(cx.g.constant(1.0, q.dtype))
    else:
        r = q - q.fmod(cx.g.constant(1.0, q.dtype))
    return _cast(r, _lt(cx.dtype(node)))


@op(aten.remainder.Tensor, aten.remainder.Scalar)
def _remainder(cx, node, a, b):
    return _binary(cx, node, a, b, lambda x, y: x.remainder(y))


@op(aten.fmod.Tensor, aten.fmod.Scalar)
def _fmod(cx, node, a, b):
    return _binary(cx, node, a, b, lambda x, y: x.fmod(y))


@op(aten.maximum.default)
def _maximum(cx, node, a, b):
    return _binary(cx, node, a, b, lambda x, y: x.maximum(y))


@op(aten.minimum.default)
def _minimum(cx, node, a, b):
    return _binary(cx, node, a, b, lambda x, y: x.minimum(y))


@op(aten.pow.Tensor_Scalar)
def _pow_scalar(cx, node, a, p):
    a = _cast(a, _lt(cx.dtype(node)))
    if p == 2:
        return a.square()
    if p == 0.5:
        return a.sqrt()
    if p == -1:
        return a.reciprocal()
    return a.pow(float(p))


@op(aten.pow.Tensor_Tensor, aten.pow.Scalar)
def _pow_tensor(cx, node, a, b):
    return _binary(cx, node, a, b, lambda x, y: x.pow(y))


def _unary(method):
    def fn(cx, node, a):
        return getattr(_cast(a, _lt(cx.dtype(node))), method)()

    return fn


for _t, _m in [
    (aten.neg.default, "neg"),
    (aten.exp.default, "exp"),
    (aten.exp2.default, "exp2"),
    (aten.log.default, "log"),
    (aten.log2.default, "log2"),
    (aten.sin.default, "sin"),
    (aten.cos.default, "cos"),
    (aten.tanh.default, "tanh"),
    (aten.sigmoid.default, "sigmoid"),
    (aten.relu.default, "relu"),
    (aten.silu.default, "silu"),
    (aten.erf.default, "erf"),
    (aten.abs.default, "abs"),
    (aten.sign.default, "sign"),
    (aten.sqrt.default, "sqrt"),
    (aten.rsqrt.default, "rsqrt"),
    (aten.reciprocal.default, "reciprocal"),
]:
    CONVERTERS[_t] = _unary(_m)


@op(aten.gelu.default)
def _gelu(cx, node, a, approximate="none"):
    a = _cast(a, _lt(cx.dtype(node)))
    return a.gelu_tanh() if approximate == "tanh" else a.gelu()


@op(aten.clamp.default, aten.clamp_min.default, aten.clamp_max.default)
def _clamp(cx, node, a, lo=None, hi=None):
    if node.target == aten.clamp_max.default:
        lo, hi = None, lo
    a = _cast(a, _lt(cx.dtype(node)))
    if lo is not None:
        a = a.maximum(cx.g.constant(float(lo), a.dtype))
    if hi is not None:
        a = a.minimum(cx.g.constant(float(hi), a.dtype))
    return a


@op(aten.isnan.default)
def _isnan(cx, node, a):
    return a.isnan()


@op(aten.isinf.default)
def _isinf(cx, node, a):
    return a.isinf()


def _compare(name):
    def fn(cx, node, a, b):
        dt = _promoted(cx, node)
        return _binary(cx, node, a, b, lambda x, y: getattr(x, name)(y), compute=dt)

    return fn


_CMP = {"eq": "eq", "ne": "ne", "lt": "__lt__", "le": "__le__", "gt": "__gt__", "ge": "__ge__"}
for _n, _m in _CMP.items():
    for _ov in ("Tensor", "Scalar"):
        CONVERTERS[getattr(getattr(aten, _n), _ov)] = _compare(_m)


def _logical(name):
    def fn(cx, node, a, b=None):
        if b is None:
            return _cast(a, "bool").logical_not()
        out = _binary(cx, node, a, b, lambda x, y: getattr(x, name)(y), compute=torch.bool)
        return _cast(out, _lt(cx.dtype(node)))

    return fn


def _bool_only(node):
    return None if node.meta["val"].dtype == torch.bool else "bitwise op on integers"


CONVERTERS[aten.logical_and.default] = _logical("logical_and")
CONVERTERS[aten.logical_or.default] = _logical("logical_or")
CONVERTERS[aten.logical_not.default] = _logical(None)
for _t, _n in [
    (aten.bitwise_and.Tensor, "logical_and"),
    (aten.bitwise_or.Tensor, "logical_or"),
    (aten.bitwise_not.default, None),
]:
    CONVERTERS[_t] = _logical(_n)
    CHECKS[_t] = _bool_only


@op(aten.where.self, aten.where.ScalarSelf, aten.where.ScalarOther, aten.where.Scalar)
def _where(cx, node, c, a, b):
    dt = _lt(cx.dtype(node))
    c = _cast(c, "bool")
    if _scalar(a) and _scalar(b):
        a = cx.g.constant(float(a), dt)
    if _scalar(a):
        return c.where(float(a), _cast(b, dt))
    if _scalar(b):
        return c.where(_cast(a, dt), float(b))
    return c.where(_cast(a, dt), _cast(b, dt))


# ---- dtype and copies ----


def _check_to_copy(node):
    val = node.meta.get("val")
    src = node.args[0].meta.get("val") if isinstance(node.args[0], torch.fx.Node) else None
    if src is not None and val is not None and val.device != src.device:
        return "a copy between devices"
    return None


@op(aten._to_copy.default, check=_check_to_copy)
def _to_copy(cx, node, a, **kw):
    return _cast(a, _lt(cx.dtype(node)))


@op(prims.convert_element_type.default)
def _convert(cx, node, a, dtype):
    return _cast(a, _lt(dtype))


@op(aten.clone.default, aten.alias.default, aten.lift_fresh_copy.default, aten.detach.default)
def _clone(cx, node, a, **kw):
    return a


# ---- reductions ----


def _axes(dims, rank):
    if dims is None or dims == []:
        return list(range(rank))
    return [dims] if isinstance(dims, int) else list(dims)


@op(aten.sum.dim_IntList, aten.sum.default)
def _sum(cx, node, a, dims=None, keepdim=False, dtype=None):
    a = _cast(a, _lt(cx.dtype(node)))
    if a.ndim == 0:
        return a
    return a.sum(_axes(dims, a.ndim), keepdim)


@op(aten.mean.dim, aten.mean.default)
def _mean(cx, node, a, dims=None, keepdim=False, dtype=None):
    a = _cast(a, _lt(cx.dtype(node)))
    if a.ndim == 0:
        return a
    return a.mean(_axes(dims, a.ndim), keepdim)


@op(aten.amax.default)
def _amax(cx, node, a, dims=(), keepdim=False):
    return a.max(_axes(dims, a.ndim), keepdim)


@op(aten.amin.default)
def _amin(cx, node, a, dims=(), keepdim=False):
    return a.min(_axes(dims, a.ndim), keepdim)


@op(aten.argmax.default)
def _argmax(cx, node, a, dim=None, keepdim=False):
    if dim is None:
        a, dim = a.flatten(), 0
    return a.argmax(dim, keepdim).cast("i64")


@op(aten.argmin.default)
def _argmin(cx, node, a, dim=None, keepdim=False):
    if dim is None:
        a, dim = a.flatten(), 0
    return a.argmin(dim, keepdim).cast("i64")


@op(aten.max.dim)
def _max_dim(cx, node, a, dim, keepdim=False):
    return [a.max(dim, keepdim), a.argmax(dim, keepdim).cast("i64")]


@op(aten.min.dim)
def _min_dim(cx, node, a, dim, keepdim=False):
    return [a.min(dim, keepdim), a.argmin(dim, keepdim).cast("i64")]


@op(aten.any.dim, aten.any.dims, aten.any.default)
def _any(cx, node, a, dim=None, keepdim=False):
    nz = _cast(a, "bool").cast("i32")
    return nz.max(_axes(dim, a.ndim), keepdim) > 0 if a.ndim else nz > 0


@op(aten.all.dim, aten.all.dims, aten.all.default)
def _all(cx, node, a, dim=None, keepdim=False):
    nz = _cast(a, "bool").cast("i32")
    return nz.min(_axes(dim, a.ndim), keepdim) > 0 if a.ndim else nz > 0


def _count(cx, a, axes):
    n = 1
    for ax in axes:
        n = _mul_size(n, a.shape[ax])
    return n


@op(aten.var.correction, aten.var.dim)
def _var(cx, node, a, dims=None, correction=None, keepdim=False, unbiased=None):
    a = _cast(a, _lt(cx.dtype(node)))
    axes = [d % a.ndim for d in _axes(dims, a.ndim)]
    if node.target == aten.var.dim:
        correction = 1 if unbiased in (None, True) else 0
    correction = 1 if correction is None else correction
    d = a - a.mean(axes, True)
    s = d.square().sum(axes, keepdim)
    n = _count(cx, a, axes)
    if isinstance(n, int):
        return s / float(max(n - correction, 0))
    return s / (_size_tensor(cx, n).cast(a.dtype) - float(correction))


@op(aten.native_layer_norm.default)
def _layer_norm(cx, node, a, shape, weight, bias, eps):
    axes = list(range(a.ndim - len(shape), a.ndim))
    mean = a.mean(axes, True)
    d = a - mean
    rstd = (d.square().mean(axes, True) + float(eps)).rsqrt()
    out = d * rstd
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return [out, mean, rstd]


def _softmax_logits(cx, src, axis):
    """The converted logits of ``src`` when it is an f32/f64 softmax over ``axis`` (in its dtype),
    else None."""
    if getattr(src, "target", None) is not aten._softmax.default:
        return None
    # (a 16-bit softmax rounds different logits to equal probabilities often, and eager breaks
    # those ties by index: the logits' order would differ from eager's there)
    if cx.dtype(src) not in (torch.float32, torch.float64):
        return None
    x = src.args[0]
    if x not in cx.values or src.args[1] % len(cx.shape(src)) != axis:
        return None
    return _cast(cx.values[x], _lt(cx.dtype(src)))


@op(aten.topk.default)
def _topk(cx, node, a, k, dim=-1, largest=True, sorted=True):
    axis = dim % a.ndim
    check_pairwise(a.shape[axis], "a topk")
    logits = _softmax_logits(cx, node.args[0], axis) if largest else None
    if logits is not None:
        # The largest of a softmax (a router's top-k): ranked by the logits, its order, with a NaN
        # as +inf; the values gathered from the softmax. The softmax's values read its sum, which
        # a program may compute in two kernels (two orders, two values in the last bits); pairs
        # compared across the two copies give ranks that are no permutation and indices outside
        # the axis. The logits reach the comparisons through elementwise ops only.
        inf = float("inf")
        _, indices = ((logits < inf).where(logits, inf)).topk(k, axis, True)
        return [a.gather_elements(axis, indices), indices.cast("i64")]
    values, indices = a.topk(k, axis, largest)
    return [values, indices.cast("i64")]


@op(aten._softmax.default)
def _softmax(cx, node, a, dim, half_to_float=False):
    return _cast(a, _lt(cx.dtype(node))).softmax(dim)


@op(aten._log_softmax.default)
def _log_softmax(cx, node, a, dim, half_to_float=False):
    return _cast(a, _lt(cx.dtype(node))).log_softmax(dim)


@op(aten.cumsum.default)
def _cumsum(cx, node, a, dim, dtype=None):
    return _cast(a, _lt(cx.dtype(node))).cumsum(dim)



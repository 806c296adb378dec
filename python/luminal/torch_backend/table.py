"""The conversion table and what its two halves share (ops.py: elementwise, dtype and
reduction ops; ops_shape.py: matmul, movement, creation, indexing and size ops).

``CONVERTERS`` maps a core ATen op to ``fn(cx, node, *args, **kwargs)`` (see ops.py);
``CHECKS`` maps some of them to ``fn(node) -> None`` when the node converts, else the reason,
run before partitioning. A converter raises ``Unsupported`` for what it does not handle (the node
then runs in eager PyTorch). The table fills when ops.py and ops_shape.py are imported
(convert.py imports both).
"""

import re

import torch

CONVERTERS = {}
CHECKS = {}


class Unsupported(Exception):
    """An op or an argument the converter does not handle (the node runs in eager)."""


def op(*targets, check=None):
    """Registers the decorated converter for each of `targets` (and its check)."""

    def wrap(fn):
        for t in targets:
            CONVERTERS[t] = fn
            if check:
                CHECKS[t] = check
        return fn

    return wrap


_DTYPES = {
    torch.float32: "f32",
    torch.float64: "f64",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.int8: "i8",
    torch.uint8: "u8",
    torch.int16: "i16",
    torch.int32: "i32",
    torch.int64: "i64",
    torch.bool: "bool",
}


def luminal_dtype(dtype):
    """The luminal dtype name of a torch dtype (a name passes through)."""
    if isinstance(dtype, str):
        return dtype
    try:
        return _DTYPES[dtype]
    except KeyError:
        raise Unsupported(f"dtype {dtype}") from None


def _lt(dtype):
    """The luminal dtype name of a torch dtype."""
    return luminal_dtype(dtype)


def _cast(x, dt):
    return x if x.dtype == dt else x.cast(dt)


def _add_size(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    return f"({a}) + ({b})"


def _mul_size(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    return f"({a}) * ({b})"


def _size_tensor(cx, size):
    """A 0-d i64 tensor holding a size (a dynamic one is read as the sum of that many ones; one
    of an integer input that can be negative, Converter.shifted, as an iota of the expression)."""
    if isinstance(size, int):
        return cx.g.constant(float(size), "i64")
    if any(re.search(rf"\b{name}\b", size) for name in cx.shifted):
        return cx.g.iota(size, 1).cast("i64").sum(0)
    return cx.g.full([size], 1.0, "i64").sum(0)

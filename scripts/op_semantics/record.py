#!/usr/bin/env python3
"""Records PyTorch's results on edge cases of pow, division and 16-bit matmul.

Writes tests/data/op_semantics/{pow,div,matmul}.json, read by tests/runtime/op_semantics_test.cpp,
which checks the ReferenceRuntime and the CPU backend against them bit for bit (NaN as NaN).
The files are small and committed; this script is never run in CI. To refresh them:

    python3 -m venv /tmp/torchenv && /tmp/torchenv/bin/pip install torch numpy
    /tmp/torchenv/bin/python scripts/op_semantics/record.py

Format (kept simple so the test parses it without a JSON library): one object with "torch" (the
version) and "cases", a list of objects whose values are strings, integers or lists of them.
Every element value is the hex string of its bits in the case's dtype ("0x7fc00000"); pow's
exponent is the hex of the f64 bits. Case keys:
    pow:    dtype, exponent, x, out          out[i] = torch.pow(x[i], exponent)
    div:    dtype, x, y, out                 out[i] = x[i] / y[i]
    matmul: dtype, a_shape, b_shape, a, b, out (row-major)   out = a @ b

The table holds only cases whose torch result is exact (a special value, or the exact result of
the math, representable in the dtype) for pow and matmul, so the files record semantics rather
than one library's rounding; division is IEEE's correctly rounded quotient, which torch computes
on the CPU, for every pair.
"""

import json
import math
import os
import random
import struct
import sys
from fractions import Fraction

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT_DIR = os.path.join(ROOT, "tests", "data", "op_semantics")

DTYPES = {
    "float32": (torch.float32, torch.int32, 8),
    "float64": (torch.float64, torch.int64, 16),
    "float16": (torch.float16, torch.int16, 4),
    "bfloat16": (torch.bfloat16, torch.int16, 4),
}
INF, NAN = math.inf, math.nan


def bits(t, dtype):
    """Hex strings of the bits of every element of tensor t (of dtype)."""
    _, int_t, width = DTYPES[dtype]
    mask = (1 << (4 * width)) - 1
    return ["0x%0*x" % (width, int(v) & mask) for v in t.contiguous().view(int_t).flatten().tolist()]


def tensor(values, dtype):
    return torch.tensor(values, dtype=DTYPES[dtype][0])


def f64_hex(v):
    return "0x%016x" % struct.unpack("<Q", struct.pack("<d", v))[0]


def exact_or_special(value, exact):
    """True when the torch result `value` (a float) is special or equals the exact rational."""
    if math.isnan(value) or math.isinf(value) or value == 0:
        return True
    return exact is not None and Fraction(value) == exact


# ---------------------------------------------------------------- pow

POW_BASES = [-INF, -4.0, -3.0, -2.0, -1.0, -0.5, -0.0, 0.0, 0.25, 0.5, 1.0, 2.0, 4.0, INF, NAN]
POW_EXPONENTS = [17.0, 33.0, -3.0, 16.0, 3.0, 2.0, -1.0, 0.0, 1.5, -1.5, 0.5, -0.5, 2.5, 0.25,
                 INF, -INF, NAN]


def exact_pow(x, p):
    """The exact x^p as a Fraction when it is a finite nonzero rational, else None."""
    if p == 0 or x == 1 or (x == -1 and math.isinf(p)):
        return Fraction(1)  # C99 Annex F, also for NaN and infinite operands
    if not (math.isfinite(x) and math.isfinite(p)) or x == 0:
        return None
    fp = Fraction(p)
    if fp.denominator == 1:
        return Fraction(x) ** fp.numerator
    if x < 0:
        return None
    # x^(n/d): the rational r with r^d == x^n, when there is one.
    r = Fraction(round(abs(x) ** p)) if abs(x) ** p >= 1 else 1 / Fraction(round(abs(x) ** -p))
    return r if r ** fp.denominator == Fraction(x) ** fp.numerator else None


def record_pow():
    cases = []
    for dtype in ["float32", "float64", "float16", "bfloat16"]:
        for p in POW_EXPONENTS:
            xs = []
            for x in POW_BASES:
                r = float(torch.pow(tensor([x], dtype), p)[0])
                if exact_or_special(r, exact_pow(x, p)):
                    xs.append(x)
            xt = tensor(xs, dtype)
            cases.append({"op": "pow", "dtype": dtype, "exponent": f64_hex(p), "x": bits(xt, dtype),
                          "out": bits(torch.pow(xt, p), dtype)})
    return cases


# ---------------------------------------------------------------- division

F32_TINY = 2.0 ** -149
F64_TINY = 2.0 ** -1074
DIV_VALUES = {
    "float32": [0.0, -0.0, 1.0, -1.0, 3.0, -7.0, 0.1, 1e-3, 1.5, 2.0 ** -126, F32_TINY,
                -3 * F32_TINY, 5 * F32_TINY, 2.0 ** -140, -(2.0 ** -126 - F32_TINY),
                float(np.finfo(np.float32).max), 1e30, 2.0 ** 127, 1e-38, INF, -INF, NAN],
    "float64": [0.0, -0.0, 1.0, -1.0, 3.0, -7.0, 0.1, 1e-3, 1.5, 2.0 ** -1022, F64_TINY,
                -3 * F64_TINY, 5 * F64_TINY, 2.0 ** -1040, -(2.0 ** -1022 - F64_TINY),
                float(np.finfo(np.float64).max), 1e300, 2.0 ** 1023, 1e-310, 2.0 ** 600,
                2.0 ** -600, INF, -INF, NAN],
}


def random_bits_values(dtype, n, rng):
    """n values from random bit patterns (every exponent equally likely: subnormals, huge and
    tiny values, and now and then inf and NaN), plus n of moderate magnitude."""
    width = 32 if dtype == "float32" else 64
    fmt_i, fmt_f = ("<I", "<f") if width == 32 else ("<Q", "<d")
    out = [struct.unpack(fmt_f, struct.pack(fmt_i, rng.getrandbits(width)))[0] for _ in range(n)]
    out += [rng.uniform(-1, 1) * 10.0 ** rng.randint(-8, 8) for _ in range(n)]
    return out


def record_div():
    cases = []
    rng = random.Random(20240611)
    for dtype in ["float32", "float64"]:
        vals = DIV_VALUES[dtype]
        xs = [a for a in vals for _ in vals]
        ys = [b for _ in vals for b in vals]
        # Exact subnormal ties and near ties: (2k+1) * tiny / 2 and / 6.
        tiny = F32_TINY if dtype == "float32" else F64_TINY
        for k in [1, 3, 5, 7, 1001]:
            for d in [2.0, -2.0, 6.0, 10.0, 14.0, 2.0 * 3 * 7]:
                xs.append(k * tiny)
                ys.append(d)
        xs += random_bits_values(dtype, 64, rng)
        ys += random_bits_values(dtype, 64, rng)
        xt, yt = tensor(xs, dtype), tensor(ys, dtype)
        cases.append({"op": "div", "dtype": dtype, "x": bits(xt, dtype), "y": bits(yt, dtype),
                      "out": bits(xt / yt, dtype)})
    return cases


# ---------------------------------------------------------------- matmul


def exact_rounded_once(a, b, dtype):
    """a @ b computed exactly (f64: small integers) and rounded once to dtype."""
    return (a.double() @ b.double()).to(DTYPES[dtype][0])


def record_matmul():
    cases = []
    gen = torch.Generator().manual_seed(7)

    def add(dtype, a_vals, b_vals, a_shape, b_shape):
        a = tensor(a_vals, dtype).reshape(a_shape)
        b = tensor(b_vals, dtype).reshape(b_shape)
        out = a @ b
        want = exact_rounded_once(a, b, dtype)
        if not torch.equal(out.view(DTYPES[dtype][1]), want.view(DTYPES[dtype][1])):
            sys.exit(f"torch {dtype} matmul {a_shape} @ {b_shape} is not the exact result "
                     "rounded once; the table assumes it is")
        cases.append({"op": "matmul", "dtype": dtype, "a_shape": list(a_shape),
                      "b_shape": list(b_shape), "a": bits(a, dtype), "b": bits(b, dtype),
                      "out": bits(out, dtype)})

    for dtype, hi in [("bfloat16", 40), ("float16", 60)]:
        # 17*17 - 16*18 = 1 (in bf16, 17*17 = 289 rounds to 288).
        add(dtype, [17, 16], [17, -18], (1, 2), (2, 1))
        add(dtype, [17, 16], [17, -18], (2,), (2,))  # 1-D dot product
        add(dtype, [255, 1, 3, 253], [257, -256, 85, -86], (2, 2), (2, 2))
        for (m, k, n) in [(3, 4, 5), (4, 8, 3), (1, 16, 2)]:
            a = torch.randint(-hi, hi + 1, (m * k,), generator=gen).tolist()
            b = torch.randint(-hi, hi + 1, (k * n,), generator=gen).tolist()
            add(dtype, a, b, (m, k), (k, n))
        a = torch.randint(-hi, hi + 1, (2 * 3 * 4,), generator=gen).tolist()
        b = torch.randint(-hi, hi + 1, (2 * 4 * 2,), generator=gen).tolist()
        add(dtype, a, b, (2, 3, 4), (2, 4, 2))  # batched
    return cases


def write(name, cases):
    path = os.path.join(OUT_DIR, name + ".json")
    with open(path, "w") as f:
        f.write('{"torch": "%s", "cases": [\n' % torch.__version__)
        f.write(",\n".join(json.dumps(c, separators=(", ", ": ")) for c in cases))
        f.write("\n]}\n")
    print(f"{path}: {len(cases)} cases")


def main():
    torch.set_flush_denormal(False)
    torch.set_num_threads(1)
    os.makedirs(OUT_DIR, exist_ok=True)
    write("pow", record_pow())
    write("div", record_div())
    write("matmul", record_matmul())


if __name__ == "__main__":
    main()

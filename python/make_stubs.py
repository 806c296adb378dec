"""Writes python/luminal/_luminal.pyi from a built extension: nanobind's stubgen, then the
argument types the bindings take as Python objects spelled out.

    PYTHONPATH=build/python python3 python/make_stubs.py
"""

import pathlib
import re
import subprocess
import sys
import tempfile

HEADER = '''from collections.abc import Mapping, Sequence
from typing import Any, Union, overload

import numpy

# A dtype: a name ("f32", "bfloat16", "int64"), a NumPy dtype or scalar type, or a torch dtype.
DTypeLike = Union[str, Any]
# A shape: sizes and dynamic-dim names, such as ["s", 4].
ShapeLike = Sequence[Union[int, str]]
'''

REPLACE = [
    ("shape: object", "shape: ShapeLike"),
    ("n: object", "n: int | str"),
    ("expr: object", "expr: int | str"),
    ("size: object, step: object", "size: int | str, step: int | str"),
    ("start: object, end: object | None", "start: int | str, end: int | str | None"),
    ("axis: object", "axis: int | Sequence[int]"),
    ("key: object", "key: str | Tensor"),
    ("value: object) -> None", "value: Any) -> None"),
    ("array: object", "array: Any"),
    ("owner: object | None", "owner: Any | None"),
    ("on_token: object | None", "on_token: Any | None"),
    (
        "def get(self, key: str | Tensor, out: object | None = None) -> object:",
        "def get(self, key: str | Tensor, out: numpy.ndarray | None = None) -> numpy.ndarray:",
    ),
    (
        "def get(self, key: str | Tensor, out: object | None = None, wait: bool = True) -> object:",
        "def get(self, key: str | Tensor, out: Any | None = None, wait: bool = True) -> Any:",
    ),
    ("def forward(self, ids: Sequence[int]) -> object:", "def forward(self, ids: Sequence[int]) -> numpy.ndarray:"),
    ("dtypes: tuple = ...", "dtypes: tuple[str, ...] = ..."),
]


def main() -> None:
    out = pathlib.Path(__file__).parent / "luminal" / "_luminal.pyi"
    with tempfile.TemporaryDirectory() as tmp:
        raw = pathlib.Path(tmp) / "_luminal.pyi"
        subprocess.run(
            [sys.executable, "-m", "nanobind.stubgen", "-q", "-m", "luminal._luminal", "-o", str(raw)],
            check=True,
        )
        s = raw.read_text()
    s = re.sub(r"from collections\.abc import [^\n]*\nfrom typing import [^\n]*\n", HEADER, s, count=1)
    s = s.replace(
        '"""luminal-cpp\'s C++ API (the `luminal` package re-exports it)."""',
        '"""luminal-cpp\'s C++ API (the `luminal` package re-exports it).\n\n'
        "Written by python/make_stubs.py (nanobind's stubgen, then the argument types that the\n"
        'bindings take as Python objects spelled out)."""',
    )
    s = re.sub(r"dtype: object( \| None = None)?", lambda m: "dtype: DTypeLike" + (m.group(1) or "").replace("object", "DTypeLike"), s)
    for a, b in REPLACE:
        s = s.replace(a, b)
    out.write_text(s)
    left = [line for line in s.splitlines() if "object" in line and "def " in line]
    print(f"wrote {out}" + (f"; still untyped: {left}" if left else ""))


if __name__ == "__main__":
    main()

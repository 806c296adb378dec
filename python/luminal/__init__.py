"""luminal: a search-based inference compiler (luminal-cpp) from Python.

Graphs and tensors, compile options, sessions and backends are the C++ API, bound one to one
(the extension ``luminal._luminal``); ``load`` opens a Hugging Face folder or a GGUF file as a
``Model`` whose ``generate`` and ``chat`` stream text.

    import numpy as np, luminal
    g = luminal.Graph()
    x = g.tensor("x", ["s", 4]); w = g.tensor("w", [4, 3])
    y = (x @ w).softmax(-1).output("y")
    s = luminal.Session(g, luminal.cpu(), luminal.CompileOptions(search_graph_limit=10))
    s.set("w", np.ones((4, 3), np.float32)); s.set("x", np.ones((2, 4), np.float32))
    s.execute(s=2); print(s.get("y"))
"""

from ._luminal import (
    Backend,
    CompileOptions,
    CpuBackend,
    DimBucket,
    Error,
    Graph,
    Reference,
    Session,
    Tensor,
    compile,
    concat,
    cpu,
    cuda,
    cuda_available,
    dtype_name,
    dtypes,
    stack,
)
from .models import Model, load

__all__ = [
    "Backend",
    "CompileOptions",
    "CpuBackend",
    "DimBucket",
    "Error",
    "Graph",
    "Model",
    "Reference",
    "Session",
    "Tensor",
    "compile",
    "concat",
    "cpu",
    "cuda",
    "cuda_available",
    "dtype_name",
    "dtypes",
    "load",
    "stack",
]
__version__ = "0.1.0"

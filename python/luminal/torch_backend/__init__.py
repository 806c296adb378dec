"""``torch.compile(model, backend="luminal")``: a Dynamo backend that runs FX graphs on luminal.

Dynamo's graph goes through AOTAutograd with the core ATen decompositions (and CUDA's fused
attention kernels as math, decomp.py); values that read no
input are computed once (const_fold.py); the ATen graph is split into pieces that convert to luminal graphs (ops.py, convert.py) and nodes that run in
PyTorch eager (partition.py); each piece is a luminal Session (piece.py). Sizes Dynamo keeps
symbolic (``dynamic=True``, ``torch._dynamo.mark_dynamic``) become luminal dims, searched per
bucket, so a new size inside a bucket runs without recompiling. Inference only.

    import torch, luminal.torch_backend
    fast = torch.compile(model, backend="luminal", dynamic=True, options={"search_budget": 20})
    with torch.no_grad():
        y = fast(x)
    print(luminal.torch_backend.report())

The backend is registered under the name "luminal" when this module is imported, and by the
package's ``torch_dynamo_backends`` entry point once it is installed with pip. ``capture(fn,
*args)`` (replay.py) replays a compiled call on the same tensors without Dynamo's per-call work.
"""

import atexit
import functools
import weakref

import torch
from torch._dynamo.backends.registry import _BACKENDS, register_backend
from torch._functorch.aot_autograd import aot_module_simplified

import luminal

from . import convert  # noqa: F401  (fills the table)
from .table import CONVERTERS
from .options import Options
from . import const_fold, decomp, ops_group, partition
from .partition import op_name, split
from .replay import capture

__all__ = ["luminal_backend", "capture", "report", "reset", "supported_ops", "Options"]


class _Report:
    def __init__(self):
        self.graphs = []
        self.pieces = []  # per graph, its pieces (each makes its session at its first call)
        self.stats = {"executes": 0}

    def add_graph(self, pieces, fallback, eager):
        self.graphs.append(
            {
                "pieces": len(pieces),
                "piece_nodes": [p.nodes for p in pieces],
                "fallback": dict(fallback),
                "eager": dict(eager),
            }
        )
        self.pieces.append(pieces)
        _pieces.update(pieces)


_report = _Report()
# Every piece made, for _release at exit (reset() clears the report, not this).
_pieces = weakref.WeakSet()


def report():
    """What the backend did since the last reset(): {"compiles", "executes", "graphs"}; each graph
    has its piece count, the nodes in each piece, the ops that fell back to eager with the reason
    (``fallback``), every op left to eager with its count (``eager``), the values computed
    once at compile time (``constants``, ``constant_bytes``: const_fold.py) and the sessions (None for a piece not
    called yet: a piece makes its session at its first call)."""
    graphs = [
        {**g, "sessions": [p.session for p in pieces]}
        for g, pieces in zip(_report.graphs, _report.pieces)
    ]
    return {
        "compiles": len(_report.graphs),
        "executes": _report.stats["executes"],
        "graphs": graphs,
        "fallback": {k: v for g in _report.graphs for k, v in g["fallback"].items()},
    }


def reset():
    """Clears the report, and the memory of fallback warnings already given."""
    _report.graphs.clear()
    _report.pieces.clear()
    _report.stats["executes"] = 0
    partition.warned.clear()


def supported_ops():
    """The ATen/prims ops (and SymInt operators) the converter has a rule for."""
    ops_group.register_grouped_mm()
    return sorted(op_name(t) for t in CONVERTERS)


class _Backend:
    def __init__(self, kind, threads):
        self.device_type = kind
        self.luminal = luminal.cuda() if kind == "cuda" else luminal.cpu(threads)


@functools.lru_cache(maxsize=None)
def _backend(kind, threads):
    return _Backend(kind, threads)


def _device_kind(example_inputs, options):
    if options.backend:
        return options.backend
    for t in example_inputs:
        if isinstance(t, torch.Tensor) and t.device.type == "cuda":
            return "cuda"
    return "cpu"


def _dim_range(inputs, options):
    fake = torch._guards.detect_fake_mode(inputs)
    env = fake.shape_env if fake is not None else None

    def rng(name):
        lo, hi = 1, options.max_dim
        if env is not None:
            import sympy

            r = env.var_to_range.get(sympy.Symbol(name, integer=True, positive=True))
            if r is None:
                r = next((v for k, v in env.var_to_range.items() if k.name == name), None)
            if r is not None:
                low, high = _finite(r.lower, None), _finite(r.upper, None)
                if low is None or low < 0 or (high is not None and high < 1):
                    return _shifted(low, high, options.max_dim)
                lo = max(low, 1)
                hi = min(hi if high is None else high, hi)
        if hi < lo:
            raise luminal.Error(
                f"the dynamic size {name} is at least {lo}, above max_dim={options.max_dim}; "
                f"raise options={{'max_dim': ...}}"
            )
        return lo, hi

    return rng


def _shifted(low, high, max_dim):
    """(min, max, sign, offset) for an integer input that can be negative (transformers 5.17's
    Falcon passes logits_to_keep = 0 and slices from -logits_to_keep: Dynamo gives it the range
    (-inf, 0]). A luminal dim is never negative: it holds sign * (value - offset), from 0."""
    if low is not None:
        return 0, max_dim if high is None else max(min(high - low, max_dim), 0), 1, low
    if high is not None:
        return 0, max_dim, -1, high
    return 0, 2 * max_dim, 1, -max_dim


def _finite(v, default):
    try:
        return int(v) if v.is_integer and v.is_finite is not False else default
    except (TypeError, AttributeError, ValueError):
        return default


def _static_input_nodes(gm):
    ctx = torch._guards.TracingContext.try_get()
    idx = set()
    meta = getattr(ctx, "fw_metadata", None) if ctx is not None else None
    if meta is not None:
        idx = set(getattr(meta, "static_input_indices", ()) or ())
    phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    return {phs[i] for i in idx if i < len(phs)}


def _inference_compiler(options, kind):
    def fw(gm, example_inputs):
        backend = _backend(kind, options.threads)
        static = _static_input_nodes(gm)
        folded = (0, 0)
        if options.fold_constants > 0:
            folded = const_fold.fold(gm, options.fold_constants)
            # (the folded values never change: bound once, as weights are)
            static |= {n for n in gm.graph.nodes if n.op == "get_attr"}
        run = split(gm, backend, options, _dim_range(example_inputs, options), static, _report)
        _report.graphs[-1]["constants"], _report.graphs[-1]["constant_bytes"] = folded
        return run

    return fw


def _no_training(*args, **kwargs):
    raise RuntimeError(
        "torch.compile(backend='luminal') runs inference only, and this graph needs gradients: "
        "call the model under torch.no_grad() or torch.inference_mode()"
    )


def luminal_backend(gm, example_inputs, mode=None, options=None, **kwargs):
    """The Dynamo backend: ``torch.compile(model, backend="luminal", options={...})``."""
    opts = Options(options, mode)
    if torch.is_grad_enabled() and any(
        isinstance(t, torch.Tensor) and t.requires_grad for t in example_inputs
    ):
        _no_training()
    kind = _device_kind(example_inputs, opts)
    return aot_module_simplified(
        gm,
        example_inputs,
        fw_compiler=_inference_compiler(opts, kind),
        bw_compiler=_no_training,
        decompositions=decomp.decompositions(),
        # In-place writes into inputs (a static KV cache) stay in the graph as copy_ nodes, which
        # convert to carried state written in the input's memory (ops_shape._copy_); without
        # this, the graph returns each mutated input's whole new value and AOTAutograd copies it
        # back after every call.
        keep_inference_input_mutations=True,
    )


@atexit.register
def _release():
    """Drops the sessions before the interpreter exits (Dynamo's caches hold the pieces), before
    their backends."""
    for piece in list(_pieces):
        piece.session = None
    reset()
    try:
        torch._dynamo.reset()
    except RuntimeError:
        # Dynamo's reset imports Inductor, which cannot register its exit hook this late when
        # nothing imported it before; the sessions are already gone.
        pass
    _backend.cache_clear()


if "luminal" not in _BACKENDS:
    register_backend(luminal_backend, name="luminal")

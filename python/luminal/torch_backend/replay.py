"""capture(): a compiled call replayed without Dynamo, AOTAutograd or their per-call checks.

A call of a ``torch.compile(..., backend="luminal")`` function spends host time before any
kernel runs: Dynamo checks its guards (a few microseconds per input, and every parameter is an
input), AOTAutograd's wrapper and the FX graph pass the arguments on, and each piece checks its
inputs. For a decode step of a large model that is hundreds of inputs and a few tenths of a
millisecond a token. ``capture`` runs the function once and records the graph it ran with the
tensors it was given; the returned callable runs that graph again on those same tensors, as
``torch.cuda.graph`` replays what it captured (and as Inductor's hand-captured CUDA graph does in
our benchmarks):

    step = luminal.torch_backend.capture(fast_decode, ids, pos, k_cache, v_cache)
    for _ in range(n):
        logits = step()              # reads ids, pos and the caches as they are now
        ids.copy_(logits[:, -1].argmax(-1, keepdim=True)); pos += 1

Write new values into the captured tensors in place (``copy_``, ``+=``); a tensor replaced by
another, or a Python value changed, is not seen. Every tensor of the call's output is a new
tensor at each replay. Only the graph replays: Python code of the function outside its graph
(side effects on Python objects) does not run again, and guards are not checked, so a changed
shape, dtype or device of a captured tensor is the caller's error. The function must run as one
graph (no graph break); capture says so otherwise.
"""

import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

import luminal

__all__ = ["capture"]

# While capture() runs: each graph call of the backend as (run, args, outputs).
calls = None


def record(run, args, outs):
    """Called by a graph call of the backend (partition.split's run) while capturing (calls is
    not None)."""
    calls.append((run, args, outs))


def capture(fn, *args, **kwargs):
    """Runs ``fn(*args, **kwargs)`` once (``fn`` compiled with ``backend="luminal"``) and returns
    a callable that runs its graph again on the same tensors, without Dynamo's guards or
    AOTAutograd's wrapper; it returns what ``fn`` returned, computed anew."""
    global calls
    if calls is not None:
        raise luminal.Error("capture: already capturing (capture() inside a captured function)")
    calls = []
    try:
        with torch.no_grad():
            result = fn(*args, **kwargs)
    finally:
        recorded, calls = calls, None
    if len(recorded) != 1:
        why = (
            "ran no graph of backend='luminal' (is fn compiled with torch.compile(..., "
            "backend='luminal')?)"
            if not recorded
            else f"ran {len(recorded)} graphs (a graph break: torch._dynamo.explain(fn)(...) "
            "shows where; replaying would skip the Python between them)"
        )
        raise luminal.Error(f"capture: fn must run as one graph, and it {why}")
    run, graph_args, graph_outs = recorded[0]
    leaves, spec = tree_flatten(result)
    where = []  # per leaf: the index of the graph output it is, or None to keep the leaf
    for leaf in leaves:
        if not isinstance(leaf, torch.Tensor):
            where.append(None)
            continue
        j = next((j for j, o in enumerate(graph_outs) if o is leaf), None)
        if j is None:
            raise luminal.Error(
                f"capture: fn returned a tensor of shape {tuple(leaf.shape)} that is not an "
                "output of its graph (a view or copy made outside it); return the graph's "
                "outputs as they are"
            )
        where.append(j)

    def replay():
        with torch.no_grad():
            outs = run(*graph_args)
        return tree_unflatten(
            [outs[j] if j is not None else leaf for j, leaf in zip(where, leaves)], spec
        )

    return replay

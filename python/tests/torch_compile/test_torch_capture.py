"""capture(): a compiled call replayed on the tensors it was captured with, without Dynamo or
AOTAutograd. Each replay must compute what a compiled (and an eager) call computes from the
tensors' current values, write a static cache in place as the call does, return new tensors in
the function's own structure, and refuse what it cannot replay (graph breaks, no luminal graph,
an output made outside the graph)."""

import pytest
import torch

import luminal
import luminal.torch_backend as lt
from test_torch_mutation import CacheStep, caches


def decode_loop(step_fn, x, pos, kc, vc, steps, gen):
    """Runs `steps` steps, each writing new values into x and pos in place before calling
    step_fn() (which reads them); returns each step's output and caches."""
    outs = []
    for p in range(steps):
        x.copy_(torch.randn(1, 1, 16, generator=gen))
        pos.fill_(p)
        outs.append((step_fn(), kc.clone(), vc.clone()))
    return outs


def test_a_replay_reads_the_captured_tensors_current_values(quick):
    torch.manual_seed(0)
    model = CacheStep().eval()
    fast = torch.compile(model, backend="luminal", options=quick)
    x, pos = torch.zeros(1, 1, 16), torch.tensor([0])
    kc, vc = caches()
    ekc, evc = caches()
    with torch.no_grad():
        step = lt.capture(fast, x, pos, kc, vc)
        kc.zero_()
        vc.zero_()
        ptrs = (kc.data_ptr(), vc.data_ptr())
        compiles = lt.report()["compiles"]
        got = decode_loop(step, x, pos, kc, vc, 6, torch.Generator().manual_seed(3))
        ex, epos = torch.zeros(1, 1, 16), torch.tensor([0])
        want = decode_loop(
            lambda: model(ex, epos, ekc, evc), ex, epos, ekc, evc, 6,
            torch.Generator().manual_seed(3),
        )
    for i, ((y, k, v), (y0, k0, v0)) in enumerate(zip(got, want)):
        torch.testing.assert_close(y, y0, msg=lambda m: f"step {i}: {m}")
        torch.testing.assert_close(k, k0, msg=lambda m: f"step {i}, k cache: {m}")
        torch.testing.assert_close(v, v0, msg=lambda m: f"step {i}, v cache: {m}")
    # Every step attended over a different number of rows: the replays did not all return one
    # value, and each is a new tensor.
    assert not torch.equal(got[0][0], got[5][0])
    assert got[0][0] is not got[1][0]
    assert (kc.data_ptr(), vc.data_ptr()) == ptrs
    assert lt.report()["compiles"] == compiles  # replays compile nothing


class Pair(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        y = self.lin(x)
        return {"y": y, "sum": (y.sum(-1),), "n": 3}


def test_a_replay_returns_the_functions_structure(quick):
    torch.manual_seed(0)
    model = Pair().eval()
    fast = torch.compile(model, backend="luminal", options=quick)
    x = torch.randn(2, 8)
    with torch.no_grad():
        step = lt.capture(fast, x)
        x.mul_(2)
        got = step()
        want = model(x)
    assert set(got) == {"y", "sum", "n"} and got["n"] == 3
    torch.testing.assert_close(got["y"], want["y"])
    torch.testing.assert_close(got["sum"][0], want["sum"][0])


def test_capture_refuses_what_it_cannot_replay(quick):
    torch.manual_seed(0)
    lin = torch.nn.Linear(8, 8).eval()
    x = torch.randn(2, 8)

    def broken(x):
        y = lin(x)
        torch._dynamo.graph_break()
        return lin(y)

    with torch.no_grad():
        with pytest.raises(luminal.Error, match="ran 2 graphs"):
            lt.capture(torch.compile(broken, backend="luminal", options=quick), x)
        with pytest.raises(luminal.Error, match="ran no graph"):
            lt.capture(lin, x)

        def outside(x):
            return lin(x)

        fast = torch.compile(outside, backend="luminal", options=quick)
        with pytest.raises(luminal.Error, match="not an output of its graph"):
            lt.capture(lambda x: fast(x)[0], x)

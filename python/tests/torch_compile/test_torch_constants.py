"""Values that read no input of the graph are computed once at compile time (const_fold.py)."""

import pytest
import torch

import luminal.torch_backend as lt

QUICK = {"search_budget": 4, "seed": 1, "max_dim": 64, "threads": 2}


class Rope(torch.nn.Module):
    """Rope with its inverse frequencies built in forward, as the benchmark Llama does."""

    def forward(self, x, pos):
        d = x.shape[-1]
        inv = 1.0 / 500000.0 ** (torch.arange(0, d, 2, dtype=torch.float32) / d)
        ang = pos.to(torch.float32)[:, None] * inv[None, :]
        cos, sin = torch.cat([ang.cos(), ang.cos()], -1), torch.cat([ang.sin(), ang.sin()], -1)
        x1, x2 = x[..., : d // 2], x[..., d // 2 :]
        return x * cos + torch.cat([-x2, x1], -1) * sin


def compiled(f, options):
    return torch.compile(f, backend="luminal", options=options)


def run_compiled(module, args, options=QUICK):
    """module(*args) through a fresh backend="luminal" compile: (output, its graph's report)."""
    lt.reset()
    torch._dynamo.reset()
    with torch.no_grad():
        out = compiled(module, options)(*args)
    return out, lt.report()["graphs"][0]


def test_inverse_frequencies_fold_and_match_eager():
    torch.manual_seed(0)
    x, pos = torch.randn(2, 5, 64), torch.arange(3, 8)
    want = Rope()(x, pos)
    got, g = run_compiled(Rope(), (x, pos))
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
    assert g["constants"] >= 1
    off, g = run_compiled(Rope(), (x, pos), {**QUICK, "fold_constants": 0})
    torch.testing.assert_close(off, want, rtol=1e-6, atol=1e-6)
    assert g["constants"] == 0


def test_a_value_over_the_limit_stays_in_the_graph():
    def f(x):
        return x * torch.ones(40, 40).tril()

    x = torch.randn(40, 40)
    whole = compiled(f, QUICK)(x)
    torch.testing.assert_close(whole, f(x), rtol=0, atol=0)
    g = lt.report()["graphs"][0]
    assert (g["constants"], g["constant_bytes"]) == (1, 40 * 40 * 4)  # the mask, once
    lt.reset()
    torch._dynamo.reset()
    # Over 1 KiB: the mask is computed in the graph, from the small values it is built from.
    got = compiled(f, {**QUICK, "fold_constants": 1024})(x)
    torch.testing.assert_close(got, f(x), rtol=0, atol=0)
    g = lt.report()["graphs"][0]
    assert g["constant_bytes"] <= 1024 * g["constants"] < 40 * 40 * 4


@pytest.mark.filterwarnings("ignore:luminal. these ops run in PyTorch eager")
def test_random_values_are_drawn_at_every_call():
    def f(x):
        return x + torch.rand(8)

    fast = compiled(f, QUICK)
    x = torch.zeros(8)
    a, b = fast(x), fast(x)
    assert not torch.equal(a, b)
    assert lt.report()["graphs"][0]["constants"] == 0


def test_a_constant_output_is_a_new_tensor_at_every_call():
    def f(x):
        return x * 2, torch.arange(4, dtype=torch.float32) * 3

    fast = compiled(f, QUICK)
    x = torch.ones(4)
    _, c = fast(x)
    c.add_(100)  # the caller owns what it gets back
    _, again = fast(x)
    torch.testing.assert_close(again, torch.tensor([0.0, 3.0, 6.0, 9.0]), rtol=0, atol=0)


def test_a_returned_view_of_a_constant_is_never_the_buffer():
    """A slice of a constant by a dynamic size, returned: were it read from the folded buffer,
    a caller writing into what it got would change every later call's constant."""

    def f(x):
        return x * 2, torch.arange(64, dtype=torch.float32)[: x.shape[0]]

    fast = torch.compile(f, backend="luminal", dynamic=True, options=QUICK)
    x = torch.ones(5)
    _, c = fast(x)
    c.add_(100)
    _, again = fast(x)
    torch.testing.assert_close(again, torch.arange(5, dtype=torch.float32), rtol=0, atol=0)
    # The arange stays in the graph: its one reader is a view that is returned.
    assert lt.report()["graphs"][0]["constants"] == 0


class TwoRopes(torch.nn.Module):
    """Two layers, each building its own rope frequencies (equal values) and one of a different
    base (different values)."""

    def forward(self, x, pos):
        y = Rope()(Rope()(x, pos), pos)
        inv = 1.0 / 10000.0 ** (torch.arange(0, x.shape[-1], 2, dtype=torch.float32) / 64)
        return y * inv.repeat(2)


def test_equal_constants_are_one_buffer():
    torch.manual_seed(0)
    x, pos = torch.randn(2, 5, 64), torch.arange(3, 8)
    got, g = run_compiled(TwoRopes(), (x, pos))
    torch.testing.assert_close(got, TwoRopes()(x, pos), rtol=1e-6, atol=1e-6)
    # Rope's frequencies once for both layers (as many buffers as one Rope keeps), and the other
    # base's values of their own.
    _, one = run_compiled(Rope(), (x, pos))
    assert one["constants"] >= 1
    assert g["constants"] == one["constants"] + 1

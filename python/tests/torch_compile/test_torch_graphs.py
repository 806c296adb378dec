"""Graph shapes that differ between torch and transformers versions: dynamic sizes related only
at run time, CPU scalar tensors in a CUDA graph and integer inputs that are 0 or negative (all met
on torch 2.11 / transformers 5.17)."""

import pytest
import torch
from torch._decomp import core_aten_decompositions
from torch.fx.experimental.proxy_tensor import make_fx

import luminal.torch_backend as lt
from luminal.torch_backend.convert import Converter


class MaskRead(torch.nn.Module):
    """Reads a mask of n columns at the m + 1 positions of a cache of m rows and one new row, as
    transformers 5.17's causal mask does: n == m + 1 at every call, but Dynamo gives n and m
    separate symbols."""

    def forward(self, mask, cache, new):
        rows = torch.cat([cache, new], 0)  # [m + 1, d]
        keep = mask[0, torch.arange(cache.shape[0] + 1)]  # a gather of m + 1 from n
        return (rows * keep[:, None]).sum(0) + keep.sum()


def test_related_sizes_are_timed_at_the_first_calls_values(counted):
    """Timed at 32 for each symbol, the gather reads mask[32] of 32 columns and every candidate
    is rejected; timed at the call's sizes (which agree), it runs."""
    torch.manual_seed(5)
    m = MaskRead().eval()
    make, calls = counted
    fast = torch.compile(m, backend=make(), dynamic=True)
    with torch.no_grad():
        for n in (6, 10, 40):
            mask = (torch.rand(1, n) > 0.3).float()
            cache, new = torch.randn(n - 1, 8), torch.randn(1, 8)
            torch.testing.assert_close(fast(mask, cache, new), m(mask, cache, new))
            if n == 6:
                first = len(calls)
    assert len(calls) == first
    r = lt.report()
    assert r["fallback"] == {} and sum(g["pieces"] for g in r["graphs"]) >= 1
    assert r["executes"] == 3 * sum(g["pieces"] for g in r["graphs"])


def _keep_last(x, k):
    """transformers 5.17's Falcon slices its logits from -logits_to_keep (0): Dynamo gives the
    integer input the range (-inf, 0]."""
    tail = x[:, -k:]  # a start from the input: luminal cannot prove it within the axis
    return x[:, x.size(1) + k :] * 2 + (x.size(1) + k) + k, tail.reshape(-1, x.size(2)) + 1


def test_an_integer_input_that_is_negative_converts(counted):
    make, calls = counted
    fast = torch.compile(_keep_last, backend=make(), dynamic=True)
    with torch.no_grad():
        for s, k in ((12, -3), (9, -5), (7, -7)):
            x = torch.randn(2, s, 4)
            got, want = fast(x, k), _keep_last(x, k)
            assert got[0].shape == (2, -k, 4) and got[1].shape == (2 * (s + k), 4)
            torch.testing.assert_close(got, want)
    assert len(calls) <= 2  # (torch 2.15 compiles the first call static)
    r = lt.report()
    assert r["fallback"] == {} and all(g["pieces"] == 1 for g in r["graphs"])


def test_buckets_hold_the_first_calls_value():
    opts = lt.Options({"dim_buckets": {"s0": [(1, 8), (9, 64)], "s1": [(1, 64, 5)]}})
    assert opts.buckets_for("s0", 1, 64, value=12) == [(1, 8), (9, 64, 12)]
    assert opts.buckets_for("s1", 1, 64, value=12) == [(1, 64, 5)]  # given: kept
    assert lt.Options().buckets_for("s2", 2, 64, value=7) == [(2, 64, 7)]
    assert lt.Options().buckets_for("s2", 2, 64) == [(2, 64, 32)]


def _fake_cuda():
    from torch._subclasses.fake_tensor import FakeTensorMode

    try:
        with FakeTensorMode():
            torch.empty(1, device="cuda")
    except Exception as e:  # a torch build that cannot describe CUDA tensors
        pytest.skip(f"fake CUDA tensors: {e}")


def test_cpu_scalars_convert_in_a_cuda_graph():
    """torch 2.11's Dynamo lifts a Python float (an RMSNorm's eps) into a 0-dim float64 CPU
    tensor input, even when the module is on CUDA; its prims.convert_element_type fell back to
    eager ("a cpu tensor"). It converts now, and each output keeps the device of torch's graph."""
    _fake_cuda()

    def f(x, eps):
        e = torch.ops.prims.convert_element_type(eps, torch.float32)
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + e)
        return y, e * 2

    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode(allow_non_fake_inputs=True):
        x = torch.empty(3, 8, device="cuda")
        eps = torch.empty((), dtype=torch.float64)
        gm = make_fx(f, decomposition_table=core_aten_decompositions())(x, eps)
    probe = Converter(gm, device="cuda", probe=True).build()
    assert probe.reasons == {}
    cx = Converter(gm, device="cuda").build()
    assert [o[3].type for o in cx.outputs] == ["cuda", "cpu"]
    # A CPU graph still refuses CUDA tensors (they would be read as host memory).
    probe = Converter(gm, device="cpu", probe=True).build()
    assert set(probe.reasons.values()) == {"a cuda tensor"}

"""Sorting and grouping rows through torch.compile(backend="luminal") (ops_group.py): sort, histc
in its counting form and the grouped matmul of a mixture of experts, against eager; and what
stays in eager (histc of floats) says why."""

import math
import os

import pytest
import torch

import luminal.torch_backend as lt


def compiled(fn, quick, **kw):
    return torch.compile(fn, backend="luminal", options=quick, **kw)


def test_sort_is_torchs_stable_sort_with_ties_and_nan(quick):
    x = torch.tensor(
        [[3.0, 1.0, math.nan, 1.0, -2.0, 0.5, 1.0], [0.0, -0.0, 7.0, 7.0, -math.inf, 2.0, 7.0]]
    )
    for dim in (-1, 0):
        for descending in (False, True):
            torch._dynamo.reset()
            f = compiled(lambda t: torch.sort(t, dim=dim, descending=descending), quick)
            values, indices = f(x)
            want_v, want_i = torch.sort(x, dim=dim, descending=descending, stable=True)
            torch.testing.assert_close(values, want_v, rtol=0, atol=0, equal_nan=True)
            assert indices.dtype == torch.int64
            assert torch.equal(indices, want_i), (dim, descending)
    assert lt.report()["fallback"] == {}


def test_sort_of_integer_ids_groups_them(quick):
    ids = torch.tensor([5, 0, 3, 5, 1, 0, 5, 2], dtype=torch.int64)
    f = compiled(lambda t: torch.sort(t), quick)
    values, perm = f(ids)
    assert torch.equal(values, torch.sort(ids).values)
    assert torch.equal(ids[perm], values)  # any order of equal keys is torch's
    assert lt.report()["fallback"] == {}


def test_histc_counts_integer_ids_and_skips_those_outside(quick):
    def count(ids):
        return torch.histc(ids.float(), bins=6, min=0, max=5)

    def count_shifted(ids):
        return torch.histc(ids.float(), bins=4, min=2, max=5)

    ids = torch.tensor([5, 0, 3, 5, 1, 0, 5, 2, 9, -1], dtype=torch.int64)
    for fn in (count, count_shifted):
        torch._dynamo.reset()
        got = compiled(fn, quick)(ids)
        assert got.dtype == torch.float32
        assert torch.equal(got, fn(ids)), fn.__name__
    assert lt.report()["fallback"] == {}


def test_histc_of_floats_runs_in_eager_and_says_why(quick):
    def count(x):
        return torch.histc(x * 1.5, bins=4, min=0, max=3)

    x = torch.tensor([0.2, 1.9, 2.5, 3.0, 0.75])
    assert torch.equal(compiled(count, quick)(x), count(x))
    reasons = lt.report()["fallback"]
    assert "aten.histc.default" in reasons, reasons
    assert "integer" in reasons["aten.histc.default"]


def grouped_reference(x, w, offs):
    out = torch.zeros(x.shape[0], w.shape[2], dtype=x.dtype)
    start = 0
    for g, end in enumerate(offs.tolist()):
        out[start:end] = x[start:end] @ w[g]
        start = end
    return out


@pytest.mark.parametrize("transposed", [False, True])
def test_grouped_matmul_reads_each_rows_expert(quick, transposed):
    """Experts with no rows, several rows, and rows past the last offset (zero)."""
    torch.manual_seed(3)
    E, K, N, S = 5, 16, 12, 11
    stored = torch.randn(E, N, K) if transposed else torch.randn(E, K, N)
    offs = torch.tensor([2, 2, 6, 7, 9], dtype=torch.int32)  # expert 1 none; rows 9, 10 past

    def grouped(x, offs):
        w = stored.transpose(1, 2) if transposed else stored  # [E, K, N]
        return torch.ops.transformers.grouped_mm_fallback(x, w, offs=offs)

    if os.environ.get("LUMINAL_REQUIRE_TORCH") == "1":
        import transformers.integrations.moe  # noqa: F401  (registers the op)
    else:
        pytest.importorskip("transformers.integrations.moe")
    x = torch.randn(S, K)
    got = compiled(grouped, quick)(x, offs)
    want = grouped_reference(x, stored.transpose(1, 2) if transposed else stored, offs)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert torch.equal(got[9:], torch.zeros(2, N))
    assert lt.report()["fallback"] == {}


def test_histc_of_integer_ids_converts_as_a_cuda_graph_traces_it():
    """On CUDA transformers counts the tokens per expert with histc of the integer ids (the
    CPU's histc takes floats only): traced with fake CUDA tensors, it converts, and the counts
    (run here on the CPU backend) are bincount's."""
    from torch._decomp import core_aten_decompositions
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    import luminal
    from luminal.torch_backend.convert import Converter

    def count(ids):
        return torch.histc(ids, bins=6, min=0, max=5)

    try:
        with FakeTensorMode():
            ids = torch.empty(10, dtype=torch.int32, device="cuda")
            gm = make_fx(count, decomposition_table=core_aten_decompositions())(ids)
    except Exception as e:  # a torch build that cannot describe CUDA tensors
        pytest.skip(f"fake CUDA tensors: {e}")
    assert Converter(gm, device="cuda", probe=True).build().reasons == {}
    cx = Converter(gm, device="cuda").build()
    values = torch.tensor([5, 0, 3, 5, 1, 0, 5, 2, 9, -1], dtype=torch.int32)
    session = luminal.Session(cx.g, luminal.cpu(1))
    session.set("in0", values.numpy())
    session.execute()
    got = torch.from_numpy(session.get("out0"))
    want = torch.bincount(values.clamp(0, 9), minlength=10)[:6].clone()
    want[0] -= 1  # the -1 clamped to 0 is not counted
    assert got.tolist() == want.tolist()


def test_aten_grouped_mm_converts_as_a_cuda_graph_traces_it():
    """In bf16 on CUDA transformers calls torch's grouped_mm (aten._grouped_mm) on the experts'
    weights read transposed: traced with fake CUDA tensors, it converts, and its values (run here
    on the CPU backend) are the grouped product's."""
    from torch._decomp import core_aten_decompositions
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    import luminal
    from luminal.torch_backend.convert import Converter

    if not hasattr(torch.ops.aten, "_grouped_mm"):
        pytest.skip("this torch has no _grouped_mm")

    def grouped(x, w, offs):
        return torch.ops.aten._grouped_mm(x, w.transpose(-2, -1), offs)

    E, K, N, S = 5, 16, 12, 11
    try:
        with FakeTensorMode():
            fake = (
                torch.empty(S, K, dtype=torch.bfloat16, device="cuda"),
                torch.empty(E, N, K, dtype=torch.bfloat16, device="cuda"),
                torch.empty(E, dtype=torch.int32, device="cuda"),
            )
            gm = make_fx(grouped, decomposition_table=core_aten_decompositions())(*fake)
    except Exception as e:  # a torch build that cannot describe CUDA tensors
        pytest.skip(f"fake CUDA tensors: {e}")
    assert Converter(gm, device="cuda", probe=True).build().reasons == {}
    cx = Converter(gm, device="cuda").build()
    torch.manual_seed(4)
    x = torch.randn(S, K).to(torch.bfloat16)
    w = torch.randn(E, N, K).to(torch.bfloat16)
    offs = torch.tensor([2, 2, 6, 7, 9], dtype=torch.int32)
    session = luminal.Session(cx.g, luminal.cpu(1))
    for label, t in (("in0", x), ("in1", w), ("in2", offs)):
        session.set(label, t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy())
    session.execute()
    got = torch.from_numpy(session.get("out0"))  # bf16 comes back as f32
    want = grouped_reference(x.float(), w.float().transpose(1, 2), offs)
    torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)
    assert torch.equal(got[9:], torch.zeros(2, N))


def test_a_sort_or_topk_over_a_long_axis_stays_in_eager(quick):
    """The graph's sort compares every pair of the axis: past 4096 elements (a vocabulary's
    logits, top-p sampling) it runs in eager, and says why; the result is torch's."""

    def f(logits):
        values, idx = torch.sort(logits, descending=True)
        top = torch.topk(logits, 5)
        return values[..., :10], idx[..., :10], top.indices

    x = torch.randn(2, 5000)
    got = compiled(f, quick)(x)
    for g, w in zip(got, f(x)):
        assert torch.equal(g, w)
    reasons = lt.report()["fallback"]
    assert "4096" in reasons["aten.sort.default"] and "4096" in reasons["aten.topk.default"]

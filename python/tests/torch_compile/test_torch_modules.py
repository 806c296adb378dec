"""torch.compile(backend="luminal") against eager PyTorch on small modules."""

import math
import warnings

import pytest
import torch

import luminal.torch_backend as lt

QUICK = {"search_budget": 4, "seed": 1, "max_dim": 64, "threads": 2}


def run(model, *args, dynamic=None, options=QUICK):
    fast = torch.compile(model, backend="luminal", dynamic=dynamic, options=options)
    with torch.no_grad():
        return fast(*args), model(*args)


def test_mlp_matches_eager():
    torch.manual_seed(0)
    m = torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 32), torch.nn.ReLU(),
        torch.nn.Linear(32, 4), torch.nn.Softmax(-1)
    ).eval()
    got, want = run(m, torch.randn(8, 16))
    assert got.shape == (8, 4) and got.dtype == torch.float32
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    r = lt.report()
    assert r["compiles"] == 1 and r["fallback"] == {} and r["graphs"][0]["pieces"] == 1
    assert r["executes"] == 1


class RMSNorm(torch.nn.Module):
    def __init__(self, n, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.rand(n) + 0.5)
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope(x, base=10000.0):
    """Rotary embedding of x [batch, heads, seq, dim] (rotate-half form)."""
    s, d = x.shape[-2], x.shape[-1]
    inv = 1.0 / base ** (torch.arange(0, d, 2, dtype=torch.float32, device=x.device) / d)
    ang = torch.arange(s, dtype=torch.float32, device=x.device)[:, None] * inv[None, :]
    cos, sin = torch.cat([ang.cos()] * 2, -1), torch.cat([ang.sin()] * 2, -1)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return x * cos + torch.cat([-x2, x1], -1) * sin


class SwiGLU(torch.nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.gate = torch.nn.Linear(d, h, bias=False)
        self.up = torch.nn.Linear(d, h, bias=False)
        self.down = torch.nn.Linear(h, d, bias=False)

    def forward(self, x):
        return self.down(torch.nn.functional.silu(self.gate(x)) * self.up(x))


class Rope(torch.nn.Module):
    def forward(self, x):
        return rope(x)


class Attention(torch.nn.Module):
    """A causal self-attention block: RMSNorm, q/k/v, rope, masked softmax, output, residual."""

    def __init__(self, d=32, heads=4):
        super().__init__()
        self.h, self.hd = heads, d // heads
        self.norm = RMSNorm(d)
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.o = torch.nn.Linear(d, d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm(x)).split(d, -1)
        q, k, v = (t.view(b, s, self.h, self.hd).transpose(1, 2) for t in (q, k, v))
        q, k = rope(q), rope(k)
        att = q @ k.transpose(-1, -2) / math.sqrt(self.hd)
        mask = torch.ones(s, s, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, d)
        return x + self.o(y)


@pytest.mark.parametrize("name", ["rmsnorm", "rope", "swiglu"])
def test_layers_match_eager(name):
    torch.manual_seed(1)
    m, x = {
        "rmsnorm": (RMSNorm(24), torch.randn(3, 5, 24)),
        "rope": (Rope(), torch.randn(2, 3, 7, 16)),
        "swiglu": (SwiGLU(24, 40), torch.randn(5, 24)),
    }[name]
    got, want = run(m.eval(), x)
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert lt.report()["fallback"] == {}


def test_causal_attention_two_lengths_one_compile(counted):
    torch.manual_seed(2)
    m = Attention().eval()
    make, calls = counted
    fast = torch.compile(m, backend=make(), dynamic=True)
    with torch.no_grad():
        for s in (6, 11, 9):
            x = torch.randn(2, s, 32)
            got = fast(x)
            if s == 6:
                first = len(calls)
            torch.testing.assert_close(got, m(x), rtol=1e-4, atol=1e-5)
            # Causality: the first position ignores the others.
            x2 = x.clone()
            x2[:, 1:] += 1.0
            torch.testing.assert_close(fast(x2)[:, 0], got[:, 0], rtol=1e-5, atol=1e-6)
    # Dynamo may split the function into graphs (graph breaks); new lengths compile nothing.
    assert len(calls) == first, f"Dynamo compiled {len(calls) - first} more times"
    r = lt.report()
    assert 1 <= r["compiles"] <= first and r["fallback"] == {}
    assert r["executes"] == 6 * sum(g["pieces"] for g in r["graphs"])


def test_a_transposed_conv_runs_through_the_fallback_and_says_so():
    torch.manual_seed(3)
    m = torch.nn.Sequential(
        torch.nn.Linear(8, 8), torch.nn.Unflatten(1, (2, 2, 2)), torch.nn.ConvTranspose2d(2, 4, 2),
        torch.nn.Flatten(), torch.nn.Linear(36, 3), torch.nn.Tanh()
    ).eval()
    x = torch.randn(5, 8)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got, want = run(m, x)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    msgs = [str(x.message) for x in w if "luminal" in str(x.message)]
    assert len(msgs) == 1 and "aten.convolution.default" in msgs[0], msgs
    r = lt.report()
    assert set(r["fallback"]) == {"aten.convolution.default"}
    assert r["graphs"][0]["pieces"] == 2 and r["graphs"][0]["eager"]["aten.convolution.default"] == 1
    with warnings.catch_warnings(record=True) as w:  # the same ops again: no second warning
        warnings.simplefilter("always")
        torch._dynamo.reset()
        run(m, x)
    assert not [x for x in w if "luminal" in str(x.message)]


def test_fallback_off_is_an_error():
    m = torch.nn.ConvTranspose1d(2, 2, 3).eval()
    with pytest.raises(Exception, match="no conversion for aten.convolution.default"):
        run(m, torch.randn(1, 2, 8), options={**QUICK, "fallback": False})


def test_gradients_are_a_clear_error():
    m = torch.nn.Linear(4, 2)
    fast = torch.compile(m, backend="luminal", options=QUICK)
    with pytest.raises(Exception, match="inference only"):
        fast(torch.randn(3, 4))


def test_options_are_checked():
    with pytest.raises(Exception, match="unknown option"):
        run(torch.nn.ReLU(), torch.randn(3), options={"search_budjet": 3})
    with pytest.raises(Exception, match="'cpu' or 'cuda'"):
        run(torch.nn.ReLU(), torch.randn(3), options={"backend": "tpu"})
    with pytest.raises(Exception, match="'sync' or 'events'"):
        run(torch.nn.ReLU(), torch.randn(3), options={"stream_order": "async"})
    # On the CPU the order changes nothing.
    got, want = run(torch.nn.ReLU(), torch.randn(3), options={**QUICK, "stream_order": "events"})
    torch.testing.assert_close(got, want)


def test_parameters_bind_in_place_once():
    torch.manual_seed(4)
    m = torch.nn.Linear(256, 128).eval()
    fast = torch.compile(m, backend="luminal", options=QUICK)
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(4, 256)
            torch.testing.assert_close(fast(x), m(x), rtol=1e-5, atol=1e-5)
        st = lt.report()["graphs"][0]["sessions"][0].stats()
        weight_bytes = (256 * 128 + 128) * 4
        # Weights in place once; the input in place each call; nothing uploaded by copy.
        assert st["bytes_wrapped"] == weight_bytes + 3 * 4 * 256 * 4, st
        assert st["bytes_uploaded"] == 0, st
        m.weight.mul_(2.0)  # a changed parameter (new version) is bound again
        x = torch.randn(4, 256)
        torch.testing.assert_close(fast(x), m(x), rtol=1e-5, atol=1e-5)


def test_mixed_dtypes_and_integer_ops():
    class M(torch.nn.Module):
        def forward(self, ids, x):
            pos = torch.arange(ids.shape[1])
            keep = (ids % 3 != 0) & (pos[None, :] < 5)
            y = torch.where(keep[..., None], x, x.to(torch.float64).square().to(torch.float32))
            return y.cumsum(1), (ids // 2).sum(-1), y.argmax(-1)

    ids = torch.tensor([[1, 3, 5, 6, 7, 9, 10], [0, 2, 4, 8, 12, 13, 3]])
    x = torch.randn(2, 7, 3)
    got, want = run(M(), ids, x)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_division_by_python_numbers_is_torchs_bit_for_bit(dtype):
    """x / 8.0 (a power of two: a multiplication, exact), x / 3.0 and 3.0 / x, int / number:
    the same bits as eager (16-bit floats divide in f32 and round once, as torch)."""

    class M(torch.nn.Module):
        def forward(self, x, n):
            return x / 8.0, x / 3.0, 3.0 / x, n / 4

    torch.manual_seed(0)
    x = (torch.randn(4, 33) * 100).to(dtype)
    n = torch.arange(-6, 6)
    got, want = run(M(), x, n)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w, rtol=0, atol=0)


def test_supported_ops_lists_the_table():
    ops = lt.supported_ops()
    for name in ("aten.mm.default", "aten._softmax.default", "aten.index.Tensor"):
        assert name in ops


def test_inference_mode_and_new_inputs_each_call():
    torch.manual_seed(5)
    m = SwiGLU(16, 24).eval()
    fast = torch.compile(m, backend="luminal", options=QUICK)
    with torch.inference_mode():
        for i in range(3):
            x = torch.randn(4, 16) * (i + 1)
            torch.testing.assert_close(fast(x), m(x), rtol=1e-5, atol=1e-5)
        x = torch.randn(4, 16)
        y1 = fast(x).clone()
        x.mul_(3.0)  # the same tensor changed in place: an inference tensor has no version
        torch.testing.assert_close(fast(x), m(x), rtol=1e-5, atol=1e-5)
        assert not torch.allclose(y1, fast(x))


class Encoder(torch.nn.Module):
    """LayerNorm, SDPA (causal), GELU (tanh), var, log_softmax, max/topk, any."""

    def __init__(self):
        super().__init__()
        self.ln = torch.nn.LayerNorm(32)
        self.qkv = torch.nn.Linear(32, 96)
        self.act = torch.nn.GELU("tanh")

    def forward(self, x):
        b = x.shape[0]
        q, k, v = self.qkv(self.ln(x)).view(b, -1, 3, 4, 8).unbind(2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).reshape(b, -1, 32)
        top = y.topk(3)
        return (
            self.act(y).var(-1),
            torch.nn.functional.log_softmax(y, -1).max(-1).values,
            top.values,
            top.indices,
            (y > 2.5).any(-1),
        )


def test_layer_norm_sdpa_and_reductions_over_two_lengths(counted):
    torch.manual_seed(6)
    m = Encoder().eval()
    make, calls = counted
    fast = torch.compile(m, backend=make(), dynamic=True)
    with torch.no_grad():
        for s in (7, 12):
            x = torch.randn(2, s, 32)
            outs = fast(x)
            if s == 7:
                first = len(calls)
            for got, want in zip(outs, m(x)):
                assert got.dtype == want.dtype and got.shape == want.shape
                if got.dtype.is_floating_point:
                    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
                else:
                    assert torch.equal(got, want)
    assert len(calls) == first and lt.report()["fallback"] == {}


class Router(torch.nn.Module):
    """A mixture of experts' router: the top-k of a softmax over experts, renormalised."""

    def __init__(self):
        super().__init__()
        self.gate = torch.nn.Linear(32, 16, bias=False)

    def forward(self, x):
        p = torch.softmax(self.gate(x), -1, dtype=torch.float)
        w, i = torch.topk(p, 4, -1)
        return w / w.sum(-1, keepdim=True), i


def test_topk_of_a_softmax_takes_the_experts_eager_takes():
    # The converter ranks a softmax's top-k by its logits (ops.py, _softmax_logits): the same
    # experts and weights as eager, in one piece.
    torch.manual_seed(7)
    m = Router().eval()
    x = torch.randn(9, 32)
    (w, i), (ww, wi) = run(m, x)
    assert torch.equal(i, wi)
    torch.testing.assert_close(w, ww, rtol=1e-5, atol=1e-6)
    r = lt.report()
    assert r["fallback"] == {} and r["graphs"][0]["pieces"] == 1


def test_entry_point_in_pyproject_resolves_to_the_backend():
    import importlib.metadata
    import os
    import pathlib
    import tomllib

    from torch._dynamo.backends import registry

    root = pathlib.Path(os.environ.get("LUMINAL_SOURCE_DIR", pathlib.Path(__file__).parents[3]))
    meta = tomllib.loads((root / "pyproject.toml").read_text())
    value = meta["project"]["entry-points"]["torch_dynamo_backends"]["luminal"]
    ep = importlib.metadata.EntryPoint("luminal", value, "torch_dynamo_backends")
    saved = registry._BACKENDS.get("luminal"), registry._COMPILER_FNS.pop("luminal", None)
    try:
        # As torch finds an installed package's entry point: listed first, loaded on lookup.
        registry._BACKENDS["luminal"] = ep
        assert registry.lookup_backend("luminal") is lt.luminal_backend
    finally:
        registry._BACKENDS["luminal"] = saved[0]
        registry._COMPILER_FNS["luminal"] = saved[1]


def test_piece_after_a_fallback_gets_dims_its_inputs_only_derive(counted):
    def f(x):
        a = (x + 1).reshape(-1)  # [4*s]
        b = a.cumprod(0) * 1e-3  # no converter: eager
        return (b * 2).view(-1, 4).sum(-1)  # [s]: the piece sees 4*s, not s

    make, calls = counted
    fast = torch.compile(f, backend=make(), dynamic=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.no_grad():
            for s in (3, 5):
                x = torch.rand(s, 4) * 0.5 + 0.75
                torch.testing.assert_close(fast(x), f(x), rtol=1e-5, atol=1e-6)
    assert "aten.cumprod.default" in lt.report()["fallback"]
    assert len(calls) == 1


class CacheWrites(torch.nn.Module):
    """In-place writes torch functionalizes to index_put / index_copy / scatter: a KV-cache
    update at positions (sliced axes before the index), a row write with a negative index and
    broadcast values, index_copy_ along an inner axis, and scatter_."""

    def __init__(self):
        super().__init__()
        self.register_buffer("cache", torch.zeros(2, 3, 8, 4))

    def forward(self, kv, pos, rows):
        self.cache[:, :, pos] = kv
        y = torch.zeros(5, 4)
        y[rows] = kv[0, 0, 0]
        z = torch.zeros(3, 8).index_copy_(1, pos, kv[0, :, :, 0])
        w = torch.zeros(3, 4).scatter_(1, pos[:1].expand(3, 1) % 4, kv[0, :, :1, 1])
        return self.cache * 1.0, y, z, w


def test_index_put_index_copy_and_scatter_match_eager():
    torch.manual_seed(3)
    eager, compiled = CacheWrites().eval(), CacheWrites().eval()
    fast = torch.compile(compiled, backend="luminal", options=QUICK)
    pos, rows = torch.tensor([5, 1, 6]), torch.tensor([-1, 0])
    with torch.no_grad():
        for _ in range(2):  # the second call sees the cache the first one wrote
            kv = torch.randn(2, 3, 3, 4)
            got, want = fast(kv, pos, rows), eager(kv, pos, rows)
            for g, w in zip(got, want):
                torch.testing.assert_close(g, w, rtol=0, atol=0)
            torch.testing.assert_close(compiled.cache, eager.cache, rtol=0, atol=0)
    assert compiled.cache.abs().sum() > 0
    r = lt.report()
    assert r["fallback"] == {} and all(g["pieces"] == 1 for g in r["graphs"]), r


class SlicedIndex(torch.nn.Module):
    """Index tensors after sliced axes: transformers 5.17's Falcon reads x[:, :, :, [-2]]."""

    def forward(self, x, i, j):
        return (
            x[:, :, [-2]],  # one index after two sliced axes (its dim stays in place)
            x[:, i, j],  # two adjacent, broadcast together: [2, 3] in place of axes 1, 2
            x[:, i, :, j] * 2,  # two apart: torch puts the index's dims first
            x[..., j[0]] + 1,  # the last axis
        )


def test_index_with_sliced_axes_matches_eager(quick):
    x = torch.randn(3, 4, 5, 6)
    i = torch.tensor([[0, 3, -1]] * 2)
    j = torch.tensor([[1], [-2]])
    got, want = run(SlicedIndex().eval(), x, i, j, options=quick)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        torch.testing.assert_close(g, w, rtol=0, atol=0)
    r = lt.report()
    assert r["fallback"] == {} and r["graphs"][0]["pieces"] == 1, r


def test_empty_slices_convert(quick):
    """A slice of nothing (Phi-3's pass-through half when rope covers the whole head): in a cat,
    as an output, and summed (zeros), all in the one compiled piece."""

    def f(x):
        rot, keep = x[..., :8], x[..., 8:]
        return torch.cat((rot * 2, keep), -1), keep * 3, keep.sum(-1)

    x = torch.randn(2, 3, 8)
    got = torch.compile(f, backend="luminal", options=quick)(x)
    for g, w in zip(got, f(x)):
        assert g.shape == w.shape
        torch.testing.assert_close(g, w, rtol=0, atol=0)
    r = lt.report()
    assert r["fallback"] == {} and [g["pieces"] for g in r["graphs"]] == [1]


def test_a_tensor_assembled_by_slice_writes_converts(quick):
    """q = empty(...); q[..., :4] = a; q[..., 4:] = b (DeepSeek's q from its rope and no-rope
    halves): empty, slice_scatter and copy convert, one piece, equal to eager."""

    def f(a, b, c):
        q = torch.empty(2, 3, 10)
        q[..., :4] = a
        q[..., 4:] = b * 2
        r = torch.zeros(2, 5, 10)
        r[:, 1:4] = c  # a middle slice, broadcast along the last axis
        return q, r

    a, b, c = torch.randn(2, 3, 4), torch.randn(2, 3, 6), torch.randn(3, 1)
    got = torch.compile(f, backend="luminal", options=quick)(a, b, c)
    for g, w in zip(got, f(a, b, c)):
        torch.testing.assert_close(g, w, rtol=0, atol=0)
    r = lt.report()
    assert r["fallback"] == {} and [g["pieces"] for g in r["graphs"]] == [1]


def test_complex_values_run_in_eager_and_say_why(quick):
    """A rope in complex numbers (DeepSeek-V2, Llama's reference code): those nodes run in eager,
    the rest compiles, the result is eager's. (A complex value used to fail the whole compile.)"""

    def f(x, freqs):
        xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        y = torch.view_as_real(xc * freqs).flatten(-2)
        return torch.relu(y) + 1

    x = torch.randn(2, 5, 8)
    freqs = torch.polar(torch.ones(5, 4), torch.randn(5, 4))
    got = torch.compile(f, backend="luminal", options=quick)(x, freqs)
    torch.testing.assert_close(got, f(x, freqs), rtol=1e-6, atol=1e-6)
    reasons = lt.report()["fallback"]
    assert any("complex" in v for v in reasons.values()) or "aten.view_as_complex.default" in reasons


@pytest.mark.parametrize(
    "conv",
    [
        lambda: torch.nn.Conv1d(4, 6, 3, stride=3),
        lambda: torch.nn.Conv1d(4, 6, 1, stride=2, bias=False),
        lambda: torch.nn.Conv2d(3, 8, 4, stride=4),  # a ViT's patches: kernel = stride
        lambda: torch.nn.Conv2d(4, 6, 1, groups=2),
        lambda: torch.nn.Conv2d(6, 6, (3, 2), stride=(3, 2), groups=6),  # depthwise
        lambda: torch.nn.Conv3d(2, 4, 2, stride=2),
    ],
)
def test_convolutions_convert(conv, quick):
    torch.manual_seed(7)
    m = conv().eval()
    spatial = {torch.nn.Conv1d: (13,), torch.nn.Conv2d: (12, 10), torch.nn.Conv3d: (5, 6, 4)}
    x = torch.randn(2, m.in_channels, *spatial[type(m)])
    got, want = run(m, x, options=quick)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    r = lt.report()
    assert r["fallback"] == {} and [g["pieces"] for g in r["graphs"]] == [1]


def test_overlapping_convolutions_stay_in_eager_and_say_why(quick):
    m = torch.nn.Conv2d(4, 6, 3, padding=1).eval()
    x = torch.randn(2, 4, 9, 9)
    got, want = run(m, x, options=quick)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    assert "overlapping" in lt.report()["fallback"]["aten.convolution.default"]


def test_repeat_tiles_like_torch(quick):
    def f(x, y):
        return x.repeat(2, 3), x.repeat(2, 1, 2), y.repeat(1, 1, 4)

    x, y = torch.randn(3, 4), torch.randn(2, 1, 3)
    got = torch.compile(f, backend="luminal", options=quick)(x, y)
    for g, w in zip(got, f(x, y)):
        torch.testing.assert_close(g, w, rtol=0, atol=0)
    assert lt.report()["fallback"] == {}



def test_a_converter_failing_unexpectedly_leaves_its_node_in_eager(quick, monkeypatch):
    """Whatever a converter raises, its node runs in eager and the reason names the error (an
    IndexError from a check used to fail the whole compile)."""
    from luminal.torch_backend import table

    def broken(cx, node, *args, **kwargs):
        raise IndexError("boom")

    monkeypatch.setitem(table.CONVERTERS, torch.ops.aten.tanh.default, broken)
    torch.manual_seed(1)
    m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)).eval()
    got, want = run(m, torch.randn(3, 4), options=quick)
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
    assert lt.report()["fallback"]["aten.tanh.default"] == "IndexError: boom"

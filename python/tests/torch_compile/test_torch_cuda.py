"""torch.compile(backend="luminal") with CUDA tensors on the CUDA backend. Skipped without a
usable GPU (or on a build without the CUDA backend)."""

import pytest
import torch

import luminal
import luminal.torch_backend as lt

if not (luminal.cuda_available() and torch.cuda.is_available()):
    pytest.skip("no usable GPU (or a build without the CUDA backend)", allow_module_level=True)

QUICK = {"search_budget": 4, "seed": 1, "max_dim": 64}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_mlp_on_cuda(dtype):
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.SiLU(), torch.nn.Linear(128, 8))
    m = m.to("cuda", dtype).eval()
    fast = torch.compile(m, backend="luminal", options=QUICK)
    tol = 1e-4 if dtype == torch.float32 else 3e-2
    with torch.no_grad():
        for _ in range(2):
            x = torch.randn(16, 64, device="cuda", dtype=dtype)
            got = fast(x)
            assert got.device.type == "cuda" and got.dtype == dtype
            torch.testing.assert_close(got, m(x), rtol=tol, atol=tol)
    r = lt.report()
    assert r["fallback"] == {} and r["graphs"][0]["pieces"] == 1
    assert r["graphs"][0]["sessions"][0].stats()["bytes_uploaded"] < 16 * 64 * 4 * 3


def test_attention_two_lengths_on_cuda(counted):
    import test_torch_modules as mods

    torch.manual_seed(1)
    m = mods.Attention().cuda().eval()
    make, calls = counted
    fast = torch.compile(m, backend=make({**QUICK, "backend": "cuda"}), dynamic=True)
    with torch.no_grad():
        for s in (6, 11):
            x = torch.randn(2, s, 32, device="cuda")
            torch.testing.assert_close(fast(x), m(x), rtol=1e-4, atol=1e-4)
            if s == 6:
                first = len(calls)
    assert len(calls) == first and lt.report()["fallback"] == {}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_static_cache_on_cuda_is_written_in_its_own_memory(dtype):
    """test_torch_mutation's decode step with CUDA caches: the session writes the new rows into
    the tensors' device memory; nothing is uploaded and only the outputs come back."""
    import test_torch_mutation as mut

    torch.manual_seed(0)
    model = mut.CacheStep().to("cuda", dtype).eval()

    def cuda_caches():
        return mut.caches(lambda *s: torch.zeros(*s, device="cuda", dtype=dtype))

    want = mut.run_steps(model, *cuda_caches())
    kc, vc = cuda_caches()
    ptrs = (kc.data_ptr(), vc.data_ptr())
    fast = torch.compile(model, backend="luminal", options=QUICK)
    got = mut.run_steps(fast, kc, vc)
    tol = 1e-4 if dtype == torch.float32 else 3e-2
    for (y, k, v), (y0, k0, v0) in zip(got, want):
        torch.testing.assert_close(y, y0, rtol=tol, atol=tol)
        torch.testing.assert_close(k, k0, rtol=tol, atol=tol)
        torch.testing.assert_close(v, v0, rtol=tol, atol=tol)
    assert (kc.data_ptr(), vc.data_ptr()) == ptrs
    r = lt.report()
    assert r["fallback"] == {} and [g["pieces"] for g in r["graphs"]] == [1], r
    piece = lt._report.pieces[0][0]
    assert sorted(piece.mutations) and not piece.copy_back
    stats = r["graphs"][0]["sessions"][0].stats()
    cache_bytes = mut.HEADS * mut.SLOTS * mut.HD * dtype.itemsize
    assert stats["bytes_uploaded"] < cache_bytes, stats


def test_events_order_the_session_with_torch_without_host_waits():
    """options={"stream_order": "events"}: no call waits on the host. torch keeps the GPU busy
    (torch.cuda._sleep) before it writes the input the session reads in place, and reads each
    output at once: without the events the session would read the old input and torch an output
    not yet copied. A call returns while torch's stream is still busy (no host wait)."""
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.SiLU(), torch.nn.Linear(128, 8))
    m = m.cuda().eval()
    fast = torch.compile(m, backend="luminal", options={**QUICK, "stream_order": "events"})
    x = torch.zeros(16, 64, device="cuda")
    xs = [torch.randn(16, 64, device="cuda") for _ in range(12)]
    got = []
    with torch.no_grad():
        fast(x)  # compiles and binds x (its memory is read in place)
        torch.cuda.synchronize()
        for v in xs:
            torch.cuda._sleep(5_000_000)  # torch's stream busy for a few ms
            x.copy_(v)
            got.append(fast(x) * 2.0)  # read at once on torch's stream
        torch.cuda.synchronize()
        for v, y in zip(xs, got):
            torch.testing.assert_close(y, m(v) * 2.0, rtol=1e-4, atol=1e-4)
        # About 50 ms of work queued on torch's stream: the call returns before it is done.
        torch.cuda._sleep(100_000_000)
        x.copy_(xs[0])
        y = fast(x)
        busy = not torch.cuda.current_stream().query()
        torch.cuda.synchronize()
        assert busy, "the call waited on the host for torch's stream"
        torch.testing.assert_close(y, m(xs[0]), rtol=1e-4, atol=1e-4)
    piece = lt._report.pieces[0][0]
    assert piece.options.stream_order == "events"
    assert lt.report()["graphs"][0]["sessions"][0].stats()["bytes_uploaded"] < 16 * 64 * 4 * 3


@pytest.mark.parametrize("order", ["sync", "events"])
def test_a_static_cache_decode_loop_in_either_stream_order(order):
    """The static-cache decode step (test_torch_mutation's; the session writes the caches' own
    memory) over steps whose inputs are on the device before the loop, torch's stream kept busy
    before each step and the caches read right after it: the same values in both orders."""
    import test_torch_mutation as mut

    torch.manual_seed(0)
    model = mut.CacheStep().to("cuda").eval()
    g = torch.Generator().manual_seed(3)
    steps = [(torch.randn(1, 1, 16, generator=g).cuda(), torch.tensor([p]).cuda()) for p in range(6)]

    def run(step_fn, busy):
        kc, vc = mut.caches(lambda *s: torch.zeros(*s, device="cuda"))
        outs = []
        with torch.no_grad():
            for x, pos in steps:
                if busy:
                    torch.cuda._sleep(2_000_000)
                outs.append((step_fn(x, pos, kc, vc), kc.clone(), vc.clone()))
        torch.cuda.synchronize()
        return outs

    want = run(model, False)
    fast = torch.compile(model, backend="luminal", options={**QUICK, "stream_order": order})
    got = run(fast, True)
    for (y, k, v), (y0, k0, v0) in zip(got, want):
        torch.testing.assert_close(y, y0, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(k, k0, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(v, v0, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["qwen3-moe", "mixtral"])
def test_a_mixture_of_experts_in_bf16_on_cuda(name):
    """transformers' grouped experts in bf16 on a GPU go through aten._grouped_mm (the CPU's f32
    run takes its grouped_mm_fallback op): one piece, no fallback."""
    import json
    import os
    import pathlib

    transformers = pytest.importorskip("transformers")
    root = pathlib.Path(os.environ.get("LUMINAL_SOURCE_DIR", pathlib.Path(__file__).parents[3]))
    folder = root / "tests" / "data" / "models" / name
    prompt = json.loads((folder / "goldens.json").read_text())["prompts"][0]
    model = transformers.AutoModelForCausalLM.from_pretrained(
        folder, dtype=torch.bfloat16, attn_implementation="eager"
    )
    model = model.cuda().eval()
    fast = torch.compile(model, backend="luminal", options=QUICK)
    ids = torch.tensor([prompt["input_ids"]], device="cuda")
    with torch.no_grad():
        got = fast(input_ids=ids, use_cache=False).logits.float()
        want = model(input_ids=ids, use_cache=False).logits.float()
    torch.testing.assert_close(got, want, rtol=5e-2, atol=5e-2)
    r = lt.report()
    assert r["fallback"] == {}, r["fallback"]


@pytest.mark.parametrize("masked", [False, True])
def test_sdpa_in_bf16_converts_whichever_fused_kernel_torch_picks(masked):
    """On a GPU, scaled_dot_product_attention reaches the backend as flash, memory-efficient or
    cuDNN attention (decomp.py): each converts, in one piece, none left to eager."""

    class Step(torch.nn.Module):
        def forward(self, q, k, v, mask):
            y = torch.nn.functional.scaled_dot_product_attention(
                q, k, v, attn_mask=mask if masked else None, is_causal=not masked, enable_gqa=True
            )
            return y.transpose(1, 2).reshape(q.size(0), q.size(2), -1)

    torch.manual_seed(2)
    bf = dict(device="cuda", dtype=torch.bfloat16)
    q = torch.randn(1, 20, 8, 64, **bf).transpose(1, 2)  # laid out [B, L, H, E], as projected
    k, v = (torch.randn(1, 2, 36, 64, **bf) for _ in range(2))  # grouped heads
    mask = torch.ones(20, 36, dtype=torch.bool, device="cuda").tril(16)
    fast = torch.compile(Step(), backend="luminal", options=QUICK)
    with torch.no_grad():
        got = fast(q, k, v, mask)
        want = Step()(q, k, v, mask)
    torch.testing.assert_close(got, want, rtol=3e-2, atol=3e-2)
    r = lt.report()
    assert r["fallback"] == {}, r["fallback"]
    assert r["graphs"][0]["pieces"] == 1

"""The CUDA backend from Python: torch CUDA tensors bound in place (DLPack and data_ptr), outputs
against torch, and a tiny model on the GPU. Skipped without a GPU or without torch."""

import json

import numpy as np
import pytest

import luminal
from conftest import MODELS

if not luminal.cuda_available():
    pytest.skip("no usable GPU (or a build without the CUDA backend)", allow_module_level=True)
torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def gpu():
    return luminal.cuda()


def test_torch_cuda_tensors_bind_in_place(gpu):
    g = luminal.Graph()
    x = g.tensor("x", [64, 32])
    w = g.tensor("w", [32, 16]).persist()
    y = (x @ w).relu().output("y")
    s = luminal.Session(g, gpu, luminal.CompileOptions(search_graph_limit=4, verbose=False))
    xt = torch.randn(64, 32, device="cuda")
    wt = torch.randn(32, 16, device="cuda")
    s.bind_external("x", xt)  # DLPack
    s.bind_external_ptr("w", wt.data_ptr(), wt.numel() * 4, wt)  # by address
    s.execute()
    want = torch.relu(xt @ wt).cpu().numpy()
    np.testing.assert_allclose(s.get(y), want, rtol=1e-4, atol=1e-4)
    xt.mul_(-1)  # the session reads the tensor's memory: the next execute sees the change
    s.execute()
    np.testing.assert_allclose(s.get(y), torch.relu(xt @ wt).cpu().numpy(), rtol=1e-4, atol=1e-4)
    assert s.stats()["bytes_wrapped"] >= (64 * 32 + 32 * 16) * 4


def test_bf16_in_from_torch_and_numpy_out(gpu):
    g = luminal.Graph()
    x = g.tensor("x", [8], "bf16")
    y = (x * 2).output("y")
    s = luminal.compile(g, gpu, luminal.CompileOptions(search_graph_limit=2, verbose=False))
    s.set("x", torch.arange(8, dtype=torch.bfloat16))  # a CPU bf16 tensor through DLPack
    s.execute()
    np.testing.assert_array_equal(s.get(y), np.arange(8, dtype=np.float32) * 2)


def test_outputs_copied_into_cuda_tensors(gpu):
    g = luminal.Graph()
    x = g.tensor("x", [8, 16], "bf16")
    y = (x * 2).output("y")
    n = x.sum(-1).cast("f32").output("n")
    s = luminal.compile(g, gpu, luminal.CompileOptions(search_graph_limit=2, verbose=False))
    xt = torch.randn(8, 16, device="cuda").to(torch.bfloat16)
    torch.cuda.synchronize()
    s.bind_external("x", xt)
    s.execute()
    yt = torch.full((8, 16), 7, dtype=torch.bfloat16, device="cuda")
    nt = torch.zeros(8, device="cuda")
    torch.cuda.synchronize()  # the fills, on torch's stream, before the session's copies
    before = s.stats()["bytes_downloaded"]
    assert s.get(y, out=yt) is yt  # on the GPU, no host round trip
    s.get(n, out=nt)
    assert torch.equal(yt, xt * 2)
    torch.testing.assert_close(nt, xt.float().sum(-1), rtol=1e-2, atol=1e-2)
    assert s.stats()["bytes_downloaded"] == before
    assert s.stats()["bytes_copied"] >= 8 * 16 * 2 + 8 * 4
    with pytest.raises(luminal.Error, match="out="):
        s.get(y, out=torch.empty(8, 16, device="cuda"))  # f32, not bf16
    with pytest.raises(luminal.Error, match="out="):
        s.get(y, out=torch.empty(8, 15, dtype=torch.bfloat16, device="cuda"))
    # A CPU session does not write into device memory.
    quick = luminal.CompileOptions(search_graph_limit=2, verbose=False)
    c = luminal.compile(g, luminal.cpu(), quick)
    c.set("x", xt.cpu())
    c.execute()
    with pytest.raises(luminal.Error, match="device memory"):
        c.get(y, out=yt)


def test_tiny_model_on_the_gpu(gpu):
    p = json.loads((MODELS / "llama3" / "goldens.json").read_text())["prompts"][0]
    m = luminal.load(MODELS / "llama3", gpu, context=64, max_step=16, search_graph_limit=4)
    want = p["greedy"]["generated_ids"]
    assert m.generate_ids(p["input_ids"], len(want), ignore_eos=True) == want

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


def test_tiny_model_on_the_gpu(gpu):
    p = json.loads((MODELS / "llama3" / "goldens.json").read_text())["prompts"][0]
    m = luminal.load(MODELS / "llama3", gpu, context=64, max_step=16, search_graph_limit=4)
    want = p["greedy"]["generated_ids"]
    assert m.generate_ids(p["input_ids"], len(want), ignore_eos=True) == want

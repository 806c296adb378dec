"""luminal.load + generate on the tiny test models (tests/data): the tokens transformers gives
(goldens.json, which the C++ parity tests check too) and the tokens the `luminal run` CLI gives."""

import json
import os
import subprocess

import numpy as np
import pytest

import luminal
from conftest import GGUF_MODELS, MODELS

IDS = [1, 17, 42, 99, 5, 200, 3, 64]


def load(path, cpu, context=64):
    return luminal.load(path, cpu, context=context, max_step=16, search_graph_limit=4, verbose=False)


@pytest.fixture(scope="module")
def folder(cpu):
    return load(MODELS / "llama3", cpu)


@pytest.fixture(scope="module")
def gguf(cpu):
    return load(GGUF_MODELS / "llama3-f32.gguf", cpu, context=512)  # chat templates are long


def goldens(name):
    return json.loads((MODELS / name / "goldens.json").read_text())["prompts"]


def test_greedy_ids_equal_transformers(folder):
    for p in goldens("llama3"):
        folder.reset()
        want = p["greedy"]["generated_ids"]
        got = list(folder.generate(p["input_ids"], len(want), ignore_eos=True))
        assert got == want  # no tokenizer: the stream yields ids
        assert folder.last["tokens"] == want and folder.last["stop"] == "max_tokens"


def test_forward_logits_and_context(folder):
    folder.reset()
    p = goldens("llama3")[0]
    logits = folder.forward(p["input_ids"])
    assert logits.shape == (len(p["input_ids"]), folder.vocab_size)
    assert folder.context == len(p["input_ids"])
    np.testing.assert_allclose(logits[0], p["logits_first"], atol=1e-4)
    np.testing.assert_allclose(logits[-1], p["logits_last"], atol=1e-4)
    assert list(logits.argmax(-1)) == p["argmax"]
    folder.reset()
    assert folder.context == 0


def test_gguf_equals_the_folder(gguf, folder):
    folder.reset()
    gguf.reset()
    assert gguf.generate_ids(IDS, 16, ignore_eos=True) == folder.generate_ids(
        IDS, 16, ignore_eos=True
    )


@pytest.mark.skipif(not os.environ.get("LUMINAL_CLI"), reason="needs the luminal CLI (LUMINAL_CLI)")
def test_text_prompt_equals_the_cli(gguf):
    path = GGUF_MODELS / "llama3-f32.gguf"
    cli = [os.environ["LUMINAL_CLI"], "run", str(path), "--backend", "cpu", "--threads", "2"]
    cli += ["--context", "512", "--max-step", "16", "--search-budget", "5", "--json"]
    for prompt in ["Hello world", "The quick brown fox."]:
        out = subprocess.run(
            cli + ["--prompt", prompt, "--max-tokens", "12"],
            check=True,
            capture_output=True,
            text=True,
        )
        want = json.loads(out.stdout)
        gguf.reset()
        pieces = list(gguf.generate(prompt, 12))
        assert gguf.encode(prompt) == want["prompt_ids"]
        assert gguf.last["tokens"] == want["generated_ids"]
        assert gguf.last["stop"] == want["stop_reason"]
        assert "".join(pieces) == gguf.last["text"]


def test_streaming_stops_early_and_sampling_is_seeded(gguf):
    gguf.reset()
    stream = gguf.generate(IDS, 32, ignore_eos=True)
    first = next(stream)
    assert isinstance(first, str)
    with pytest.raises(luminal.Error, match="generating already"):
        gguf.forward(IDS)  # one request at a time
    stream.close()  # the worker stops at the next token; the model is free again
    gguf.reset()
    a = gguf.generate_ids(IDS, 8, temperature=0.8, top_p=0.9, seed=7, ignore_eos=True)
    gguf.reset()
    b = gguf.generate_ids(IDS, 8, temperature=0.8, top_p=0.9, seed=7, ignore_eos=True)
    assert a == b and len(a) == 8
    gguf.reset()
    c = gguf.generate_ids(IDS, 8, temperature=0.8, top_p=0.9, seed=8, ignore_eos=True)
    assert c != a


def test_chat_keeps_the_conversation(gguf):
    gguf.reset()
    answer = "".join(gguf.chat("Hi!", 6, system="Be brief."))
    assert answer == gguf.last["text"]
    roles = [r for r, _ in gguf._conversation]
    assert roles == ["system", "user", "assistant"]
    kept_before = gguf.context
    "".join(gguf.chat("And then?", 4))
    assert gguf.context > kept_before
    gguf.reset()


def test_model_errors(gguf, folder):
    with pytest.raises(luminal.Error, match="outside the vocabulary"):
        folder.generate_ids([folder.vocab_size + 5], 2)
    with pytest.raises(luminal.Error, match="no tokenizer"):
        folder.generate_ids("text needs a tokenizer", 2)
    with pytest.raises(luminal.Error, match="exceed the model's context"):
        gguf.generate_ids(IDS, 1000)
    with pytest.raises(luminal.Error, match="temperature"):
        gguf.generate(IDS, 2, temperature=-1)  # raised at the call, not at the first token
    with pytest.raises(luminal.Error):
        luminal.load(MODELS / "no-such-model")

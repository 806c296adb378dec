#!/usr/bin/env python3
"""Writes tests/data/gguf/models/{qwen3-moe,mixtral}-{f32,q8_0}.gguf with llama.cpp's own
convert_hf_to_gguf.py from the tiny transformers fixtures in tests/data/models.

The converter needs a tokenizer in the model folder; the fixtures have none (their parity tests
feed ids). So each fixture is copied to a scratch folder with a small tokenizer and converted
there:

    qwen3-moe  qwen3moe (ffn_gate_inp, ffn_{gate,up,down}_exps stacked [E, ...]). Its converter
               reads only a byte-level BPE tokenizer.json: the 256-token one with Qwen2's
               pre-tokenizer of tests/data/gguf/models/qwen2-q8_0.tokenizer.json. The converter
               names a pre-tokenizer by a hash of the ids its test text encodes to, which no
               vocabulary of our own matches, so the run replaces that one lookup
               (TextModel.get_vocab_base_pre) with "qwen2"; everything else is the converter's.
    mixtral    llama with expert_count (Q/K rows permuted as LlamaModel.permute does), with a
               SentencePiece tokenizer.model (BPE trained on a few sentences, under the 256-token
               vocabulary; the converter pads the rest with [PADn] tokens)

at --outtype f32 (the weights exactly) and q8_0 (2-D and expert weights in Q8_0; norms and the
router stay f32). tests/models/gguf_moe_test.cpp loads each against its folder.

    ~/.cache/luminal/venv/bin/pip install sentencepiece   (torch, transformers, numpy there)
    ~/.cache/luminal/venv/bin/python scripts/models/make_moe_ggufs.py [llama.cpp source folder]

The llama.cpp folder defaults to ~/.cache/luminal/llama.cpp/llama.cpp (the llama-cpp-python sdist's
vendored copy: scripts/gguf/build_llamacpp.sh unpacks it).
"""
import io
import os
import shutil
import subprocess
import sys
import tempfile

import sentencepiece as spm

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = os.path.join(ROOT, "tests", "data", "models")
OUT = os.path.join(ROOT, "tests", "data", "gguf", "models")

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "Mixtures of experts route every token to a few of their experts.",
    "Hello world, hello experts, hello router and softmax.",
    "In 2024 there were 1234 tokens and 42 answers.",
    "the the the and and of of to to in in is is that that for for with with",
]


def tokenizer_model():
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(CORPUS), model_writer=buf, model_type="bpe", vocab_size=160,
        hard_vocab_limit=False, character_coverage=1.0, unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
        minloglevel=2)
    return buf.getvalue()


# Runs convert_hf_to_gguf.py's main() with `pre` as the BPE pre-tokenizer's name (or unpatched).
RUNNER = """
import sys
llama_cpp, pre = sys.argv[1], sys.argv[2]
sys.path.insert(0, llama_cpp)
sys.path.insert(1, llama_cpp + "/gguf-py")
if pre:
    import conversion.base
    conversion.base.TextModel.get_vocab_base_pre = lambda self, tokenizer: pre
import convert_hf_to_gguf
sys.argv = ["convert_hf_to_gguf.py"] + sys.argv[3:]
convert_hf_to_gguf.main()
"""


def main():
    llama_cpp = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser(
        "~/.cache/luminal/llama.cpp/llama.cpp")
    os.makedirs(OUT, exist_ok=True)
    for name, pre in (("qwen3-moe", "qwen2"), ("mixtral", "")):
        with tempfile.TemporaryDirectory() as tmp:
            folder = os.path.join(tmp, name)
            shutil.copytree(os.path.join(MODELS, name), folder)
            if pre:
                shutil.copy(os.path.join(OUT, "qwen2-q8_0.tokenizer.json"),
                            os.path.join(folder, "tokenizer.json"))
            else:
                with open(os.path.join(folder, "tokenizer.model"), "wb") as f:
                    f.write(tokenizer_model())
            for outtype in ("f32", "q8_0"):
                out = os.path.join(OUT, f"{name}-{outtype}.gguf")
                subprocess.run([sys.executable, "-c", RUNNER, llama_cpp, pre, folder, "--outtype",
                                outtype, "--outfile", out], check=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
                print("wrote", os.path.relpath(out, ROOT), os.path.getsize(out), "bytes")


if __name__ == "__main__":
    main()

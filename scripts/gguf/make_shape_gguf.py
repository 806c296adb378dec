#!/usr/bin/env python3
"""Writes a GGUF with random weights in a published model's shape, for timing only (llama.cpp's
llama-bench and `luminal bench` on the same file). The vocabulary is SmolLM2's byte-level BPE
(tokens, types and merges), padded with dummy tokens to the shape's vocabulary size.

    make_shape_gguf.py SHAPE OUT.gguf --vocab VOCAB [--dtype TYPE] [--table-dtype TYPE]
    make_shape_gguf.py --dump-vocab SMOL.gguf VOCAB.json    (the small vocabulary file to carry)

    SHAPE    llama8b      Llama-3-8B (32 layers, hidden 4096, 32/8 heads, FFN 14336, vocab 128256)
             llama-tiny   a 4-layer Llama (hidden 512, 8/4 heads, FFN 1536, vocab 8192): small
                          enough to carry to a GPU machine (about 12 MB at Q4_0) for quick checks
             smollm2      SmolLM2-135M (30 layers, hidden 576, 9/3 heads, FFN 1536, vocab 49152,
                          tied embeddings)
             qwen3moe12   Qwen3-30B-A3B cut to 12 layers (hidden 2048, 32/4 heads of 128, 128
                          experts, 8 active, expert FFN 768, QK-norm, vocab 151936)
             qwen3moe-tiny  Qwen3-30B-A3B's router and experts (128 experts, 8 active) in a
                          4-layer model (hidden 256, 4/2 heads of 64, expert FFN 64, vocab 8192):
                          a MoE decode step's kernel count on the CPU
             gemma3-small  Gemma 3's layer pattern (every 6th layer global, window 128) in 12
                          small layers (hidden 128, 2/1 heads of 64, FFN 256, vocab 8192): long
                          contexts on the CPU, where attention outweighs the weights
             gemma3-1b    Gemma-3-1B (26 layers, hidden 1152, 4/1 heads of 256, FFN 6912, vocab
                          262144, window 512, every 6th layer global, tied embeddings)
    VOCAB    SmolLM2's GGUF or the JSON --dump-vocab wrote from it
    --dtype  the 2-D and expert weights' type (default f16; norms stay f32): f16, bf16, or q4_0 /
             q4_1 / q8_0 written here with gguf-py's quantizer (every matrix, embeddings and output
             too); llama.cpp's mixes (Q4_K_M) come from `llama-quantize --allow-requantize IN OUT
             Q4_K_M`
    --table-dtype  the embedding's and output's type (default --dtype's): `--dtype q4_1
             --table-dtype q8_0` gives SmolLM2's published types (llama-quantize's Q4_1 of the
             f16 file stores the tied embedding in q8_0) with no llama.cpp build

Needs numpy and llama.cpp's gguf-py (PYTHONPATH=<llama.cpp>/gguf-py). The values are one 4M-element
normal(0, 0.02) block repeated: cheap to write, and timing does not depend on them.
"""
import argparse
import json
import sys

import numpy as np

import gguf

SHAPES = {
    "llama8b": dict(arch="llama", V=128256, H=4096, I=14336, L=32, NH=32, NKV=8, HD=128,
                    theta=500000.0, eps=1e-5, tied=False),
    "llama-tiny": dict(arch="llama", V=8192, H=512, I=1536, L=4, NH=8, NKV=4, HD=64,
                       theta=100000.0, eps=1e-5, tied=False),
    "smollm2": dict(arch="llama", V=49152, H=576, I=1536, L=30, NH=9, NKV=3, HD=64,
                    theta=100000.0, eps=1e-5, tied=True),
    "qwen3moe12": dict(arch="qwen3moe", V=151936, H=2048, I=6144, L=12, NH=32, NKV=4, HD=128,
                       theta=1000000.0, eps=1e-6, tied=False, E=128, K=8, IE=768),
    "qwen3moe-tiny": dict(arch="qwen3moe", V=8192, H=256, I=768, L=4, NH=4, NKV=2, HD=64,
                          theta=1000000.0, eps=1e-6, tied=False, E=128, K=8, IE=64),
    "gemma3-small": dict(arch="gemma3", V=8192, H=128, I=256, L=12, NH=2, NKV=1, HD=64,
                         theta=1000000.0, eps=1e-6, tied=True, window=128),
    "gemma3-1b": dict(arch="gemma3", V=262144, H=1152, I=6912, L=26, NH=4, NKV=1, HD=256,
                      theta=1000000.0, eps=1e-6, tied=True, window=512),
}


def read_vocab(path):
    if path.endswith(".json"):
        with open(path) as f:
            return json.load(f)
    r = gguf.GGUFReader(path)
    f = r.fields
    return {
        "tokens": [str(t) for t in f["tokenizer.ggml.tokens"].contents()],
        "types": [int(t) for t in f["tokenizer.ggml.token_type"].contents()],
        "merges": [str(m) for m in f["tokenizer.ggml.merges"].contents()],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("shape", nargs="?")
    ap.add_argument("out", nargs="?")
    ap.add_argument("--vocab")
    types = ["f16", "bf16", "q4_0", "q4_1", "q8_0"]
    ap.add_argument("--dtype", default="f16", choices=types)
    ap.add_argument("--table-dtype", choices=types)
    ap.add_argument("--dump-vocab", nargs=2, metavar=("SMOL_GGUF", "VOCAB_JSON"))
    a = ap.parse_args()
    if a.dump_vocab:
        with open(a.dump_vocab[1], "w") as f:
            json.dump(read_vocab(a.dump_vocab[0]), f)
        print("wrote", a.dump_vocab[1])
        return
    if a.shape not in SHAPES or not a.out or not a.vocab:
        sys.exit(f"usage: make_shape_gguf.py SHAPE OUT.gguf --vocab VOCAB (SHAPE: {', '.join(SHAPES)})")
    s = SHAPES[a.shape]
    V, H, I, L, NH, NKV, HD = (s[k] for k in ("V", "H", "I", "L", "NH", "NKV", "HD"))
    voc = read_vocab(a.vocab)
    toks, types = voc["tokens"][:V], voc["types"][:V]
    toks += [f"<|dummy_{i}|>" for i in range(V - len(toks))]
    types += [gguf.TokenType.NORMAL] * (V - len(types))
    # A vocabulary cut short keeps the merges whose parts and result it still holds (a tokenizer
    # rejects a merge of tokens it does not have).
    kept = set(toks)
    merges = [m for m in voc["merges"]
              if (lambda p: len(p) == 2 and p[0] in kept and p[1] in kept and p[0] + p[1] in kept)(
                  m.split(" "))]

    w = gguf.GGUFWriter(a.out, s["arch"])
    w.add_context_length(8192)
    w.add_embedding_length(H)
    w.add_block_count(L)
    w.add_feed_forward_length(I)
    w.add_head_count(NH)
    w.add_head_count_kv(NKV)
    w.add_key_length(HD)
    w.add_value_length(HD)
    w.add_rope_freq_base(s["theta"])
    w.add_layer_norm_rms_eps(s["eps"])
    w.add_vocab_size(V)
    w.add_rope_dimension_count(HD)
    if "E" in s:
        w.add_expert_count(s["E"])
        w.add_expert_used_count(s["K"])
        w.add_expert_feed_forward_length(s["IE"])
        w.add_expert_weights_norm(True)
    if "window" in s:
        w.add_sliding_window(s["window"])
    w.add_file_type({"f16": gguf.LlamaFileType.MOSTLY_F16, "bf16": gguf.LlamaFileType.MOSTLY_BF16,
                     "q4_0": gguf.LlamaFileType.MOSTLY_Q4_0, "q4_1": gguf.LlamaFileType.MOSTLY_Q4_1,
                     "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0}[a.dtype])
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list(toks)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(False)

    rng = np.random.default_rng(0)
    base = (rng.standard_normal(1 << 22) * 0.02).astype(np.float32)

    def encode(dtype):  # (the 4M values in `dtype`, its raw GGUF type or None for f16, its qtype)
        if dtype == "f16":
            return base.astype(np.float16), None, None
        if dtype == "bf16":  # the top 16 bits of the f32 values
            return (base.view(np.uint32) >> 16).astype(np.uint16), gguf.GGMLQuantizationType.BF16, None
        # the block is quantized once; every matrix repeats its bytes (4M is whole blocks)
        qtype = {"q4_0": gguf.GGMLQuantizationType.Q4_0, "q4_1": gguf.GGMLQuantizationType.Q4_1,
                 "q8_0": gguf.GGMLQuantizationType.Q8_0}[dtype]
        return gguf.quants.quantize(base.reshape(-1, 256), qtype).reshape(-1), qtype, qtype

    matrices = encode(a.dtype)
    tables = encode(a.table_dtype) if a.table_dtype else matrices

    def add(name, *shape, enc=matrices):  # numpy shape: rows last-to-first as GGUF's ne reversed
        base_t, raw, qtype = enc
        if qtype is None:
            data = np.resize(base_t, int(np.prod(shape))).reshape(shape)
        else:
            block, nbytes = gguf.GGML_QUANT_SIZES[qtype]
            row = shape[-1] // block * nbytes
            data = np.resize(base_t, int(np.prod(shape[:-1])) * row).reshape(*shape[:-1], row)
        w.add_tensor(name, data, raw_dtype=raw)

    def norm(name, n):
        w.add_tensor(name, np.ones(n, np.float32))

    add("token_embd.weight", V, H, enc=tables)
    norm("output_norm.weight", H)
    if not s["tied"]:
        add("output.weight", V, H, enc=tables)
    for i in range(L):
        p = f"blk.{i}."
        norm(p + "attn_norm.weight", H)
        norm(p + "ffn_norm.weight", H)
        add(p + "attn_q.weight", NH * HD, H)
        add(p + "attn_k.weight", NKV * HD, H)
        add(p + "attn_v.weight", NKV * HD, H)
        add(p + "attn_output.weight", H, NH * HD)
        if s["arch"] in ("qwen3moe", "gemma3"):
            norm(p + "attn_q_norm.weight", HD)
            norm(p + "attn_k_norm.weight", HD)
        if s["arch"] == "gemma3":
            norm(p + "post_attention_norm.weight", H)
            norm(p + "post_ffw_norm.weight", H)
        if "E" in s:
            E, IE = s["E"], s["IE"]
            add(p + "ffn_gate_inp.weight", E, H)
            add(p + "ffn_gate_exps.weight", E, IE, H)
            add(p + "ffn_up_exps.weight", E, IE, H)
            add(p + "ffn_down_exps.weight", E, H, IE)
        else:
            add(p + "ffn_gate.weight", I, H)
            add(p + "ffn_up.weight", I, H)
            add(p + "ffn_down.weight", H, I)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print("wrote", a.out)


if __name__ == "__main__":
    main()

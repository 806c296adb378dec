#!/usr/bin/env python3
"""Writes tests/data/gguf/models/: GGUF models and tokenizers for tests/io/gguf_model_test.cpp.

Models (from the tiny Hugging Face models in tests/data/models, as llama.cpp's
convert_hf_to_gguf.py would write them):
  llama3-f32.gguf   every tensor F32; q_proj / k_proj rows permuted as LlamaModel.permute does;
                    Llama 3 RoPE scaling as the `rope_freqs.weight` factors the converter writes
  llama3-f16.gguf   the same with 2-D weights in F16 (norms and rope_freqs stay F32)
  qwen2-q8_0.gguf   Qwen2 (not permuted; q/k/v biases; tied embeddings) with 2-D weights in Q8_0
Their tokenizers have exactly 256 tokens (the models' vocab_size): byte-level BPE trained on a
small corpus with the bytes valid UTF-8 text uses (213) as the alphabet, plus special tokens.

Tokenizers (metadata only, no tensors), one per tokenizer.ggml.pre we support, trained on the
same corpus with the pre-tokenizer the model family's tokenizer.json uses:
  tok-gpt2.gguf, tok-llama-bpe.gguf, tok-qwen2.gguf, tok-smollm.gguf, tok-default.gguf, and
  tok-llama-spm.gguf (tokenizer.ggml.model = llama: SentencePiece tokens + scores).

expected.json holds, per fixture, the test strings' ids: from the `tokenizers` package running
the Hugging Face tokenizer.json (written next to it as <name>.tokenizer.json) for BPE; for the
SentencePiece one from a Python transcription of llama.cpp's SPM tokenizer (llm_tokenizer_spm).

    python3 -m venv /tmp/ggufenv && /tmp/ggufenv/bin/pip install gguf numpy safetensors tokenizers
    /tmp/ggufenv/bin/python scripts/gguf/make_model_fixtures.py
"""
import json
import math
import os
import sys

import gguf
import numpy as np
from safetensors.numpy import load_file
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
from tokenizers import trainers

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, "tests", "data", "gguf", "models")

GPT2_RE = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
             r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
            r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

CORPUS = [
    "The quick brown fox jumps over the lazy dog. The dog didn't care; it's lazy.",
    "Hello world! Hello, World? hello-world, HELLO WORLD.",
    "We're here, they've gone, I'm tired, you'll see, she'd know. It's the THE's.",
    "In 2024 there were 1234567 tokens, 3.14159 pi, 42 answers and 1,000,000 dollars.",
    "def main(argc, argv):\n    return argc + 1  # comment\n\n\tindented\ttabs\n",
    "Caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00fcber stra\u00dfe \u00e9t\u00e9 fa\u00e7ade.",
    "\u4e2d\u6587\u6587\u672c\u6d4b\u8bd5 \u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8 "
    "\ud55c\uad6d\uc5b4 \u0440\u0443\u0441\u0441\u043a\u0438\u0439 \u03b5\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac",
    "Emoji \U0001F600\U0001F680 and symbols \u2192 \u2264 \u2265 \u20ac 100 \u00a3 5.",
    "the the the and and of of to to in in is is that that for for with with",
    "   leading spaces and trailing spaces   \n\n\nnew lines\r\nwindows lines",
    "token tokens tokenizer tokenization tokenized retoken",
]

TESTS = [
    "", "Hello world", "hello world", " Hello", "Hello  world", "Hello\nworld", "a\n\n\nb",
    "   spaces   ", "\ttabs\tand\ttabs", "The quick brown fox.", "I'm sure we'll see they've done it",
    "DON'T SHOUT", "12345", "3.14159", "1,000,000 and 42", "x = 1234567890",
    "Caf\u00e9 na\u00efve", "r\u00e9sum\u00e9 \u00fcber", "\u4e2d\u6587\u6587\u672c",
    "\u65e5\u672c\u8a9e", "\U0001F600 smile \U0001F680", "\u2192 arrows \u2264",
    "tokenization of tokens", "def f(x):\n    return x\n", "  \n  \n", "a  b   c    d",
    "end with space ", "CamelCaseWords andMixed123Numbers", "e\u0301 combining",
    "\u00c5ngstr\u00f6m \u212b", "!!!???...", "line1\r\nline2",
]


def corpus():
    return CORPUS * 3


def byte_alphabet(restrict):
    """The ByteLevel alphabet; `restrict`: only the bytes valid UTF-8 text without control
    characters other than \\t \\n \\r uses (213 of them)."""
    full = pre_tokenizers.ByteLevel.alphabet()
    if not restrict:
        return full
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    mapping = dict(zip(bs, [chr(c) for c in cs]))
    keep = [9, 10, 13] + list(range(0x20, 0x7F)) + list(range(0x80, 0xC0)) + list(range(0xC2, 0xF5))
    return [mapping[b] for b in keep]


def pre_for(kind):
    if kind == "gpt2":
        return None, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if kind == "llama-bpe":
        return None, pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3_RE), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    if kind == "qwen2":
        return normalizers.NFC(), pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(QWEN2_RE), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    if kind == "smollm":  # SmolLM2's tokenizer.json
        return None, pre_tokenizers.Sequence([
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    if kind == "default":  # llama.cpp's fallback regexes, each a Split
        splits = [r"[\p{P}\$\+<=>\^~\|]+", GPT2_RE.replace(r"|\s+(?!\S)|\s+", r"|\s+(?!\S)"),
                  r"\p{N}+", r"[0-9][0-9][0-9]"]
        return None, pre_tokenizers.Sequence(
            [pre_tokenizers.Split(Regex(r), behavior="isolated", invert=False) for r in splits] +
            [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    raise ValueError(kind)


def train_byte_level(kind, vocab_size, specials, restrict_alphabet, bos=None):
    norm, pre = pre_for(kind)
    tok = Tokenizer(models.BPE(ignore_merges=(kind == "llama-bpe")))
    if norm is not None:
        tok.normalizer = norm
    tok.pre_tokenizer = pre
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials,
                                  initial_alphabet=byte_alphabet(restrict_alphabet),
                                  show_progress=False, min_frequency=2)
    tok.train_from_iterator(corpus(), trainer=trainer)
    if bos is not None:
        tok.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, tok.token_to_id(bos))])
    j = json.loads(tok.to_str())
    vocab = j["model"]["vocab"]
    tokens = [None] * len(vocab)
    for t, i in vocab.items():
        tokens[i] = t
    assert all(t is not None for t in tokens), "ids are not contiguous"
    merges = [m if isinstance(m, str) else " ".join(m) for m in j["model"]["merges"]]
    types = [3 if t in specials else 1 for t in tokens]
    return tok, tokens, types, merges


def expected_ids(tok):
    return {"plain": [tok.encode(s, add_special_tokens=False).ids for s in TESTS],
            "special": [tok.encode(s, add_special_tokens=True).ids for s in TESTS]}


def add_bpe_tokenizer(w, kind, tokens, types, merges):
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre({"gpt2": "gpt-2"}.get(kind, kind))  # llama.cpp's name for GPT-2's
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)


# ---- SentencePiece (tokenizer.ggml.model = llama) ----

def spm_vocab():
    """<unk>, <s>, </s>, <0x00>..<0xFF>, then pieces learnt by a small deterministic BPE over
    "▁"-prefixed words (ties: the lexicographically smallest pair), best first, then the
    characters; a piece's score is minus its rank."""
    words = {}
    for line in corpus():
        for wd in ("\u2581" + line.replace(" ", " \u2581")).split(" "):
            if wd:
                words[wd] = words.get(wd, 0) + 1
    # Characters outside the 80 most frequent fall back to bytes.
    freq = {}
    for wd, n in words.items():
        for ch in wd:
            freq[ch] = freq.get(ch, 0) + n
    chars = sorted(freq, key=lambda c: (-freq[c], c))[:80]
    segs = {wd: list(wd) for wd in words}
    merged = []
    while len(merged) < 160:
        pairs = {}
        for wd, n in words.items():
            sg = segs[wd]
            for a, b in zip(sg, sg[1:]):
                if a in chars or len(a) > 1:
                    if b in chars or len(b) > 1:
                        pairs[(a, b)] = pairs.get((a, b), 0) + n
        if not pairs:
            break
        (a, b), n = min(pairs.items(), key=lambda kv: (-kv[1], kv[0]))
        if n < 2:
            break
        merged.append(a + b)
        for wd in words:
            sg, out, k = segs[wd], [], 0
            while k < len(sg):
                if k + 1 < len(sg) and sg[k] == a and sg[k + 1] == b:
                    out.append(a + b)
                    k += 2
                else:
                    out.append(sg[k])
                    k += 1
            segs[wd] = out
    tokens = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)]
    types = [2, 3, 3] + [6] * 256
    scores = [0.0, 0.0, 0.0] + [0.0] * 256
    pieces = merged + [c for c in chars if c not in merged]
    for k, p in enumerate(pieces):
        if p in tokens:
            continue
        tokens.append(p)
        types.append(1)
        scores.append(float(-k))
    return tokens, types, scores


def llama_cpp_spm(tokens, types, scores, text, add_bos, bos=1, add_space_prefix=True):
    """llama.cpp's SPM tokenization (llama_vocab::tokenize with parse_special)."""
    index = {}
    for i, t in enumerate(tokens):
        index.setdefault(t, i)
    specials = sorted([i for i, ty in enumerate(types) if ty in (2, 3, 4)],
                      key=lambda i: -len(tokens[i].encode()))
    frags = [("text", text)]
    for sid in specials:  # longest first, as tokenizer_st_partition
        st = tokens[sid]
        out = []
        for kind, v in frags:
            if kind != "text":
                out.append((kind, v))
                continue
            while True:
                p = v.find(st)
                if p < 0:
                    break
                if p > 0:
                    out.append(("text", v[:p]))
                out.append(("tok", sid))
                v = v[p + len(st):]
            if v:
                out.append(("text", v))
        frags = out
    ids = [bos] if add_bos else []
    prev_special = True
    for kind, v in frags:
        if kind == "tok":
            ids.append(v)
            prev_special = True
            continue
        s = (" " if add_space_prefix and prev_special else "") + v
        s = s.replace(" ", "\u2581")
        sym = list(s)  # UTF-8 characters
        while True:
            best = None
            for k in range(len(sym) - 1):
                t = index.get(sym[k] + sym[k + 1])
                if t is None:
                    continue
                if best is None or scores[t] > best[0]:
                    best = (scores[t], k)
            if best is None:
                break
            k = best[1]
            sym[k:k + 2] = [sym[k] + sym[k + 1]]
        for x in sym:
            if x in index:
                ids.append(index[x])
            else:
                ids.extend(index["<0x%02X>" % b] for b in x.encode())
        prev_special = False
    return ids


# ---- models ----

HF_TO_GGUF = {
    "model.embed_tokens.weight": "token_embd.weight",
    "model.norm.weight": "output_norm.weight",
    "lm_head.weight": "output.weight",
}
BLOCK = {
    "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
    "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output", "self_attn.q_norm": "attn_q_norm",
    "self_attn.k_norm": "attn_k_norm", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}


def gguf_name(hf):
    if hf in HF_TO_GGUF:
        return HF_TO_GGUF[hf]
    parts = hf.split(".")
    assert parts[0] == "model" and parts[1] == "layers", hf
    stem = ".".join(parts[3:-1])
    return f"blk.{parts[2]}.{BLOCK[stem]}.{parts[-1]}"


def permute(w, n_head, n_head_kv):  # convert_hf_to_gguf.py's LlamaModel.permute
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def llama3_rope_factors(cfg, rope):
    base = rope["rope_theta"]
    dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    freqs = 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.float32) / dim))
    factor = rope.get("factor", 8.0)
    low, high = rope.get("low_freq_factor", 1.0), rope.get("high_freq_factor", 4.0)
    old = rope.get("original_max_position_embeddings", 8192)
    low_wl, high_wl = old / low, old / high
    out = []
    for f in freqs:
        wl = 2 * math.pi / f
        if wl < high_wl:
            out.append(1)
        elif wl > low_wl:
            out.append(factor)
        else:
            s = (old / wl - low) / (high - low)
            out.append(1 / ((1 - s) / factor + s))
    return np.array(out, dtype=np.float32)


LLAMA3_TEMPLATE = (
    "{{- bos_token }}{%- for m in messages %}{{- '<|start_header_id|>' + m['role'] + "
    "'<|end_header_id|>\\n\\n' + m['content'] | trim + '<|eot_id|>' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
    "{%- endif %}")
CHATML_TEMPLATE = (
    "{%- for m in messages %}{{- '<|im_start|>' + m['role'] + '\\n' + m['content'] + "
    "'<|im_end|>\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- endif %}")


def write_model(name, folder, arch, wtype, kind, specials, template, expected):
    src = os.path.join(ROOT, "tests", "data", "models", folder)
    cfg = json.load(open(os.path.join(src, "config.json")))
    weights = load_file(os.path.join(src, "model.safetensors"))
    vocab = cfg["vocab_size"]
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // nh
    rope = cfg.get("rope_parameters") or cfg.get("rope_scaling") or {}
    theta = rope.get("rope_theta", cfg.get("rope_theta", 10000.0))

    bos = cfg.get("bos_token_id")
    bos_tok = specials[bos] if isinstance(bos, int) else None
    tok, tokens, types, merges = train_byte_level(
        kind, vocab, specials, restrict_alphabet=True,
        bos=bos_tok if kind == "llama-bpe" else None)
    assert len(tokens) == vocab, (len(tokens), vocab)

    w = gguf.GGUFWriter(os.path.join(OUT, name + ".gguf"), arch)
    w.add_name(f"tiny-{folder}")
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(nh)
    w.add_head_count_kv(nkv)
    w.add_rope_freq_base(theta)
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    if "head_dim" in cfg:
        w.add_key_length(head_dim)
        w.add_value_length(head_dim)
    if arch == "llama":
        w.add_vocab_size(vocab)
        w.add_rope_dimension_count(head_dim)
    w.add_file_type({"f32": 0, "f16": 1, "q8_0": 7}[wtype])
    add_bpe_tokenizer(w, kind, tokens, types, merges)
    if isinstance(bos, int):
        w.add_bos_token_id(bos)
    if isinstance(cfg.get("eos_token_id"), int):
        w.add_eos_token_id(cfg["eos_token_id"])
    w.add_chat_template(template)

    for hf in sorted(weights, key=lambda n: (n.count("."), n)):
        data = weights[hf].astype(np.float32)
        if arch == "llama" and hf.endswith(("q_proj.weight", "q_proj.bias")):
            data = permute(data, nh, nh)
        if arch == "llama" and hf.endswith(("k_proj.weight", "k_proj.bias")):
            data = permute(data, nh, nkv)
        if data.ndim >= 2 and wtype == "f16":
            w.add_tensor(gguf_name(hf), data.astype(np.float16))
        elif data.ndim >= 2 and wtype == "q8_0":
            q = gguf.quants.quantize(data, gguf.GGMLQuantizationType.Q8_0)
            w.add_tensor(gguf_name(hf), q, raw_shape=q.shape, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            w.add_tensor(gguf_name(hf), data)
    if rope.get("rope_type") == "llama3":
        w.add_tensor("rope_freqs.weight", llama3_rope_factors(cfg, rope))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    open(os.path.join(OUT, name + ".tokenizer.json"), "w").write(tok.to_str())
    expected[name] = expected_ids(tok)


def write_tokenizer(name, kind, expected):
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    bos = "<|begin_of_text|>" if kind == "llama-bpe" else None
    if bos:
        specials = [bos] + specials
    tok, tokens, types, merges = train_byte_level(kind, 420, specials, restrict_alphabet=False,
                                                  bos=bos)
    # Llama 3 and Qwen keep their special tokens after the merges: move them to the end.
    w = gguf.GGUFWriter(os.path.join(OUT, name + ".gguf"), "llama")
    add_bpe_tokenizer(w, kind, tokens, types, merges)
    if bos:
        w.add_bos_token_id(tokens.index(bos))
    w.add_eos_token_id(tokens.index("<|endoftext|>"))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    open(os.path.join(OUT, name + ".tokenizer.json"), "w").write(tok.to_str())
    expected[name] = expected_ids(tok)


def write_spm(name, expected):
    tokens, types, scores = spm_vocab()
    w = gguf.GGUFWriter(os.path.join(OUT, name + ".gguf"), "llama")
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_scores(scores)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    tests = TESTS + ["<s>Hello</s> world", "a<s> b", "</s>"]
    expected[name] = {
        "plain": [llama_cpp_spm(tokens, types, scores, s, False) for s in TESTS],
        "special": [llama_cpp_spm(tokens, types, scores, s, True) for s in TESTS],
        "extra_strings": tests[len(TESTS):],
        "extra": [llama_cpp_spm(tokens, types, scores, s, False) for s in tests[len(TESTS):]],
    }


def write_tiny(name, arch="llama", drop=None, reshape=None, pre="llama-bpe"):
    """A one-layer model (hidden 8, vocab 16) with one thing wrong, for the error tests."""
    rng = np.random.default_rng(0)
    w = gguf.GGUFWriter(os.path.join(OUT, "errors", name + ".gguf"), arch)
    w.add_block_count(1)
    w.add_context_length(32)
    w.add_embedding_length(8)
    w.add_feed_forward_length(16)
    w.add_head_count(2)
    w.add_head_count_kv(1)
    w.add_layer_norm_rms_eps(1e-5)
    tokens = [chr(0x41 + i) for i in range(15)] + ["AB"]
    add_bpe_tokenizer(w, pre, tokens, [1] * 16, ["A B"])
    shapes = {"token_embd.weight": (16, 8), "output_norm.weight": (8,),
              "blk.0.attn_norm.weight": (8,), "blk.0.attn_q.weight": (8, 8),
              "blk.0.attn_k.weight": (4, 8), "blk.0.attn_v.weight": (4, 8),
              "blk.0.attn_output.weight": (8, 8), "blk.0.ffn_norm.weight": (8,),
              "blk.0.ffn_gate.weight": (16, 8), "blk.0.ffn_up.weight": (16, 8),
              "blk.0.ffn_down.weight": (8, 16)}
    for n, shape in shapes.items():
        if n == drop:
            continue
        if reshape and n == reshape[0]:
            shape = reshape[1]
        w.add_tensor(n, rng.standard_normal(shape).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    os.makedirs(OUT, exist_ok=True)
    expected = {}
    write_model("llama3-f32", "llama3", "llama", "f32", "llama-bpe",
                ["<|pad|>", "<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"],
                LLAMA3_TEMPLATE, expected)
    write_model("llama3-f16", "llama3", "llama", "f16", "llama-bpe",
                ["<|pad|>", "<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"],
                LLAMA3_TEMPLATE, expected)
    write_model("qwen2-q8_0", "qwen2", "qwen2", "q8_0", "qwen2",
                ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], CHATML_TEMPLATE, expected)
    for kind in ["gpt2", "llama-bpe", "qwen2", "smollm", "default"]:
        write_tokenizer("tok-" + kind, kind, expected)
    write_spm("tok-llama-spm", expected)
    os.makedirs(os.path.join(OUT, "errors"), exist_ok=True)
    write_tiny("ok")
    write_tiny("unknown-arch", arch="gpt2")
    write_tiny("missing-tensor", drop="blk.0.ffn_up.weight")
    write_tiny("bad-shape", reshape=("blk.0.attn_k.weight", (8, 8)))
    write_tiny("bad-pre", pre="tekken")
    doc = {"strings": TESTS, "fixtures": expected}
    with open(os.path.join(OUT, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=True, indent=None, separators=(",", ":"))
        f.write("\n")
    files = [os.path.join(d, n) for d, _, ns in os.walk(OUT) for n in ns]
    print(f"wrote {len(files)} files, {sum(map(os.path.getsize, files))} bytes, to {OUT}")


if __name__ == "__main__":
    sys.exit(main())

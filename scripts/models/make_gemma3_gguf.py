#!/usr/bin/env python3
"""Writes tests/data/models/gemma3-6l (a tiny Gemma 3 with a Gemma-style tokenizer and goldens)
and tests/data/gguf/models/gemma3-{f32,q8_0}.gguf from it with llama.cpp's convert_hf_to_gguf.py.

The folder follows what llama.cpp's converter and gemma3 loader can carry, unlike the
tests/data/models/gemma3 fixture (query_pre_attn_scalar 24, attention soft-capping, 3 layers):

    Gemma3ForCausalLM  6 layers (layer_types: 5 sliding, then 1 full: llama.cpp's fixed pattern of
                       6), hidden 32, intermediate 64, 2 heads / 1 KV head, head_dim 16,
                       query_pre_attn_scalar 16 (= head_dim: llama.cpp scales by head_dim^-0.5),
                       window 4 (shorter than the prompts), local rope theta 1e4, global 1e6 with
                       linear scaling (factor 8, as gemma-3-4b and larger), final logit
                       soft-capping 30, no attention soft-capping (the converter refuses it), tied
                       embeddings, vocabulary 512. Weights as make_tiny_models.py sets them.
    tokenizer          a SentencePiece BPE trained on a few sentences with Gemma's settings (byte
                       fallback, split digits, no dummy prefix, whitespace kept; <pad> <eos> <bos>
                       <unk> = 0 1 2 3; <mask>, <start_of_turn>, <end_of_turn> special, "\n\n"
                       and <table> plain added tokens), as
                       tokenizer.model and the tokenizer.json transformers' GemmaTokenizer makes
                       from it; BOS added; Gemma 3's chat template (google/gemma-3-*-it).

goldens.json is make_tiny_models.py's (transformers, float32, eager). tokenizer_goldens.json holds
the ids transformers' tokenizer gives a few texts (whitespace, digits, unicode, special tokens;
the sentencepiece package agrees, checked here) and a rendered chat with its ids.
goldens_q8_0.json holds transformers' logits (first and last position of each prompt) with the
weights of gemma3-q8_0.gguf as the gguf package dequantises them (norms minus 1): Q8_0 moves this
model's logits by up to ~11% of the largest, so the file is compared with its own reference; and
max_abs_diff_q8_0_activations, how far rounding each linear's input to Q8_0 moves them further.

The GGUF files are the converter's, unpatched, at --outtype f32 (norm weights stored as 1 + w, as
the converter writes Gemma's) and q8_0 (matrices and the embedding in Q8_0; norms f32).
tests/models/gemma3_gguf_test.cpp loads them against the folder.

    ~/.cache/luminal/venv/bin/pip install sentencepiece   (torch, transformers, numpy there)
    ~/.cache/luminal/venv/bin/python scripts/models/make_gemma3_gguf.py [llama.cpp source folder]

The llama.cpp folder defaults to ~/.cache/luminal/llama.cpp/llama.cpp (the llama-cpp-python sdist's
vendored copy: scripts/gguf/build_llamacpp.sh unpacks it).
"""
import io
import json
import os
import subprocess
import sys

import sentencepiece as spm
import torch
from transformers import AutoTokenizer, Gemma3ForCausalLM, Gemma3TextConfig, GemmaTokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_tiny_models as tiny  # noqa: E402
from make_moe_ggufs import RUNNER  # noqa: E402

ROOT = tiny.ROOT
NAME = "gemma3-6l"
FOLDER = os.path.join(ROOT, "tests", "data", "models", NAME)
OUT = os.path.join(ROOT, "tests", "data", "gguf", "models")

# SentencePiece's user-defined pieces (ids 4...): the first three special, as in Gemma's vocabulary;
# the others plain added tokens (the converter types them user-defined, 4). No whitespace-only
# one: transformers' GemmaTokenizer keeps "▁▁" as an added token that raw spaces never match,
# where SentencePiece (and llama.cpp, whose converter writes it as spaces) matches the spaces.
USER_DEFINED = ["<mask>", "<start_of_turn>", "<end_of_turn>", "\n\n", "<table>"]
SPECIAL = 7  # ids below are special (control) tokens

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "Gemma models read text as SentencePiece pieces, with byte fallback for the rest.",
    "Sliding windows and global layers take turns: five local, then one global.",
    "In 2025 there were 1234 tokens, 42 answers and 7 questions.",
    "    indented code\n\tand tabs\n\nnew paragraphs",
    "Café, naïve, résumé; Grüße aus Köln.",
    "the the the and and of of to to in in is is that that for for with with",
]

TEXTS = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    " leading space",
    "trailing space ",
    "  two  spaces\n\nand\ttab",
    "    indented code\n",
    "In 2025 there were 1234 tokens.",
    "Café naïve Grüße 日本語 🙂",
    "<start_of_turn>user\nHi there<end_of_turn>\n",
    "a<mask>b<eos>",
    "<table>x\n\ny\n\n\nz",
    "",
]

MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "  Hello there, model!  "},
    {"role": "assistant", "content": "Hi."},
    {"role": "user", "content": "Café? 42"},
]

# Gemma 3's chat template (google/gemma-3-*-it tokenizer_config.json).
CHAT_TEMPLATE = (
    "{{ bos_token }}\n"
    "{%- if messages[0]['role'] == 'system' -%}\n"
    "    {%- if messages[0]['content'] is string -%}\n"
    "        {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}\n"
    "    {%- else -%}\n"
    "        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' -%}\n"
    "    {%- endif -%}\n"
    "    {%- set loop_messages = messages[1:] -%}\n"
    "{%- else -%}\n"
    "    {%- set first_user_prefix = \"\" -%}\n"
    "    {%- set loop_messages = messages -%}\n"
    "{%- endif -%}\n"
    "{%- for message in loop_messages -%}\n"
    "    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}\n"
    "        {{ raise_exception(\"Conversation roles must alternate user/assistant/user/assistant/...\") }}\n"
    "    {%- endif -%}\n"
    "    {%- if (message['role'] == 'assistant') -%}\n"
    "        {%- set role = \"model\" -%}\n"
    "    {%- else -%}\n"
    "        {%- set role = message['role'] -%}\n"
    "    {%- endif -%}\n"
    "    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else \"\") }}\n"
    "    {%- if message['content'] is string -%}\n"
    "        {{ message['content'] | trim }}\n"
    "    {%- elif message['content'] is iterable -%}\n"
    "        {%- for item in message['content'] -%}\n"
    "            {%- if item['type'] == 'image' -%}\n"
    "                {{ '<start_of_image>' }}\n"
    "            {%- elif item['type'] == 'text' -%}\n"
    "                {{ item['text'] | trim }}\n"
    "            {%- endif -%}\n"
    "        {%- endfor -%}\n"
    "    {%- else -%}\n"
    "        {{ raise_exception(\"Invalid content type\") }}\n"
    "    {%- endif -%}\n"
    "    {{ '<end_of_turn>\n' }}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "    {{'<start_of_turn>model\n'}}\n"
    "{%- endif -%}\n")


def spec():
    return (
        NAME,
        1008,
        Gemma3TextConfig(
            num_hidden_layers=6,
            hidden_size=32,
            intermediate_size=64,
            num_attention_heads=2,
            num_key_value_heads=1,
            head_dim=16,
            vocab_size=512,
            hidden_activation="gelu_pytorch_tanh",
            attention_dropout=0.0,
            max_position_embeddings=256,
            rms_norm_eps=1e-6,
            tie_word_embeddings=True,
            query_pre_attn_scalar=16,
            sliding_window=4,
            layer_types=["sliding_attention"] * 5 + ["full_attention"],
            final_logit_softcapping=30.0,
            attn_logit_softcapping=None,
            rope_parameters={
                "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                "full_attention": {"rope_type": "linear", "rope_theta": 1000000.0, "factor": 8.0},
            },
            pad_token_id=0,
            eos_token_id=1,
            bos_token_id=2,
        ),
        Gemma3ForCausalLM,
    )


def write_tokenizer(folder):
    # From tokenizer.model alone (transformers would load an old tokenizer.json instead).
    for old in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        if os.path.exists(os.path.join(folder, old)):
            os.remove(os.path.join(folder, old))
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(CORPUS), model_writer=buf, model_type="bpe", vocab_size=400,
        hard_vocab_limit=False, character_coverage=1.0, byte_fallback=True, split_digits=True,
        add_dummy_prefix=False, remove_extra_whitespaces=False,
        normalization_rule_name="identity", allow_whitespace_only_pieces=True, pad_id=0,
        eos_id=1, bos_id=2, unk_id=3, pad_piece="<pad>", eos_piece="<eos>", bos_piece="<bos>",
        unk_piece="<unk>", user_defined_symbols=USER_DEFINED,
        num_threads=1, minloglevel=2)
    with open(os.path.join(folder, "tokenizer.model"), "wb") as f:
        f.write(buf.getvalue())
    tok = GemmaTokenizer.from_pretrained(folder, add_bos_token=True, add_eos_token=False)
    tok.chat_template = CHAT_TEMPLATE
    tok.save_pretrained(folder)
    # The tokenizer_config.json without the scratch path, with the BOS/EOS flags the converter
    # reads (tokenizer.ggml.add_bos_token / add_eos_token) and the template inline.
    path = os.path.join(folder, "tokenizer_config.json")
    with open(path) as f:
        cfg = json.load(f)
    cfg.pop("vocab_file", None)
    cfg.pop("is_local", None)
    cfg.pop("local_files_only", None)
    # As Gemma's own tokenizer_config.json: every added token listed, so that the converter types
    # them control (special) or user-defined tokens (it types SentencePiece's user-defined pieces
    # normal otherwise).
    sp = spm.SentencePieceProcessor(model_file=os.path.join(folder, "tokenizer.model"))
    cfg["added_tokens_decoder"] = {
        str(i): {"content": sp.IdToPiece(i), "lstrip": False, "normalized": False,
                 "rstrip": False, "single_word": False, "special": i < SPECIAL}
        for i in range(4 + len(USER_DEFINED))}
    cfg["add_bos_token"] = True
    cfg["add_eos_token"] = False
    cfg["chat_template"] = CHAT_TEMPLATE
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2, ensure_ascii=False)
        f.write("\n")
    jinja = os.path.join(folder, "chat_template.jinja")
    if os.path.exists(jinja):
        os.remove(jinja)


def write_tokenizer_goldens(folder):
    tok = AutoTokenizer.from_pretrained(folder)
    sp = spm.SentencePieceProcessor(model_file=os.path.join(folder, "tokenizer.model"))
    texts = []
    for text in TEXTS:
        ids = tok.encode(text)
        # SentencePiece itself (special pieces matched as tokens) gives the same ids after BOS.
        if "<" not in text:
            assert ids == [2] + sp.encode(text), (text, ids, sp.encode(text))
        assert tok.decode(ids, skip_special_tokens=False) == "<bos>" + text, text
        texts.append({"text": text, "ids": ids})
    rendered = tok.apply_chat_template(MESSAGES, tokenize=False, add_generation_prompt=True)
    chat_ids = tok.encode(rendered, add_special_tokens=False)
    goldens = {"texts": texts,
               "chat": {"messages": MESSAGES, "add_generation_prompt": True, "text": rendered,
                        "ids": chat_ids}}
    with open(os.path.join(folder, "tokenizer_goldens.json"), "w") as f:
        f.write(tiny.to_json(goldens) + "\n")


def q8_0_round(x):
    """x rounded as Q8_0 stores it: blocks of 32, scale amax / 127 (kept in f16), values rounded."""
    b = x.reshape(-1, 32)
    d = b.abs().amax(dim=1, keepdim=True) / 127
    q = torch.round(b / torch.where(d > 0, d, torch.ones_like(d)))
    return (q * d.half().float()).reshape(x.shape)


def write_q8_goldens(llama_cpp, path):
    sys.path.insert(0, os.path.join(llama_cpp, "gguf-py"))
    import gguf
    import numpy as np
    from gguf.quants import dequantize

    block = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj",
             "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
             "attn_output": "self_attn.o_proj", "attn_q_norm": "self_attn.q_norm",
             "attn_k_norm": "self_attn.k_norm", "post_attention_norm": "post_attention_layernorm",
             "ffn_norm": "pre_feedforward_layernorm", "post_ffw_norm": "post_feedforward_layernorm",
             "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}
    state = {}
    for t in gguf.GGUFReader(path).tensors:
        stem = t.name.removesuffix(".weight")
        if stem == "token_embd":
            hf = "model.embed_tokens"
        elif stem == "output_norm":
            hf = "model.norm"
        else:
            _, layer, part = stem.split(".", 2)
            hf = f"model.layers.{layer}.{block[part]}"
        v = torch.from_numpy(np.array(dequantize(t.data, t.tensor_type), dtype=np.float32))
        v = v.reshape([int(n) for n in reversed(t.shape)])
        state[hf + ".weight"] = v - 1 if "norm" in hf else v
    model = Gemma3ForCausalLM.from_pretrained(FOLDER, dtype=torch.float32,
                                              attn_implementation="eager").eval()
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not unexpected and all("lm_head" in m for m in missing), (missing, unexpected)
    prompts, moved = [], 0.0
    with torch.no_grad():
        for ids in tiny.PROMPTS:
            logits = model(torch.tensor([ids])).logits[0]
            prompts.append({"input_ids": ids, "logits_first": tiny.f32_list(logits[0]),
                            "logits_last": tiny.f32_list(logits[-1])})
            # How far 8-bit activations (each linear's input in Q8_0 blocks of 32, as llama.cpp
            # and the quantized kernels round them) move the logits: the as-stored bound's scale.
            plain = torch.nn.Linear.forward
            torch.nn.Linear.forward = lambda self, x: torch.nn.functional.linear(
                q8_0_round(x), self.weight, self.bias)
            try:
                rounded = model(torch.tensor([ids])).logits[0]
            finally:
                torch.nn.Linear.forward = plain
            moved = max(moved, float((rounded - logits).abs().max()))
    goldens = {"gguf": os.path.basename(path), "max_abs_diff_q8_0_activations": tiny.f32(moved),
               "prompts": prompts}
    with open(os.path.join(FOLDER, "goldens_q8_0.json"), "w") as f:
        f.write(tiny.to_json(goldens) + "\n")
    print(f"q8_0: 8-bit activations move the logits by up to {moved:.3g}")


def main():
    llama_cpp = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser(
        "~/.cache/luminal/llama.cpp/llama.cpp")
    torch.set_num_threads(1)
    name, seed, config, cls = spec()
    tiny.make_one(name, seed, config, cls, os.path.dirname(FOLDER))
    write_tokenizer(FOLDER)
    write_tokenizer_goldens(FOLDER)
    os.makedirs(OUT, exist_ok=True)
    for outtype in ("f32", "q8_0"):
        out = os.path.join(OUT, f"gemma3-{outtype}.gguf")
        subprocess.run([sys.executable, "-c", RUNNER, llama_cpp, "", FOLDER, "--outtype", outtype,
                        "--outfile", out], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        print("wrote", os.path.relpath(out, ROOT), os.path.getsize(out), "bytes")
    write_q8_goldens(llama_cpp, os.path.join(OUT, "gemma3-q8_0.gguf"))


if __name__ == "__main__":
    main()

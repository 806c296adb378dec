#!/usr/bin/env python3
"""Makes tiny random-weight LLMs with the real `transformers` package, plus golden outputs.

These are the parity fixtures for the LLM loaders: each model is a genuine Hugging Face checkpoint
(config.json + model.safetensors, written by save_pretrained) small enough to commit, and its
goldens.json holds what transformers itself computes from it, so a C++ test can load the folder and
compare logits and greedy tokens with no Python around.

What it writes, one folder per model under the output folder (default tests/data/models):

    llama3/   LlamaForCausalLM   2 layers, hidden 64, intermediate 128, 4 heads / 2 KV heads
              (head_dim 16), vocab 256, untied lm_head, rope_theta 500000 with llama3 rope scaling
              (factor 8, low_freq_factor 1, high_freq_factor 4, original_max_position_embeddings 64:
              with head_dim 16 this puts rope frequencies in all three branches: kept, smoothed,
              divided by 8), max_position_embeddings 256, rms_norm_eps 1e-5.
    qwen2/    Qwen2ForCausalLM   same sizes, tied embeddings, q/k/v biases, rope_theta 10000.
    qwen3/    Qwen3ForCausalLM   same sizes, head_dim 16, tied embeddings, QK-norm, rope_theta 1e6.
    mistral/  MistralForCausalLM same sizes, untied, sliding_window None, rope_theta 10000.
    mistral-swa/ the same with sliding_window 4 on every layer (Mistral-7B-v0.1's kind), seed 1008.
    qwen2-swa/ qwen2's sizes with use_sliding_window, window 4, max_window_layers 1 (layer 1
              slides), seed 1009.
    gemma3/   Gemma3ForCausalLM  3 layers (sliding, full, sliding attention; window 4, shorter than
              the prompts), head_dim 16, query_pre_attn_scalar 24, tanh GELU, local/global rope
              theta 1e4/1e6, attention and final logit soft-capping (50, 30), tied embeddings.
    qwen3-moe/ Qwen3MoeForCausalLM as qwen3 (untied) with 4 experts of 32, 2 per token, renormalised
              (norm_topk_prob); tokens of one prompt choose 6 different expert pairs.
    mixtral/  MixtralForCausalLM 4 experts of 128, 2 per token, rope_theta 1e6, untied.
              (save_pretrained writes both MoE families per expert: experts.N.{gate,up,down}_proj,
              block_sparse_moe.experts.N.w1/w2/w3.)
    llama3-bf16/ llama3-f16/ qwen3-bf16/ qwen3-f16/   the same weights saved in bfloat16 / float16,
              with logits-only goldens (16-bit copies, below).

(gemma3-6l/, a Gemma 3 in the conventions llama.cpp's converter carries, with a tokenizer, is
written by make_gemma3_gguf.py with this script's make_one.)

Each folder holds config.json, generation_config.json and model.safetensors exactly as
save_pretrained writes them (float32), and goldens.json (written by this script):

    {
      "model": "llama3", "architecture": "LlamaForCausalLM", "seed": ...,
      "torch": "<version>", "transformers": "<version>", "attn_implementation": "eager",
      "prompts": [
        {
          "input_ids": [...],
          "argmax": [...],                  argmax of the logits at every prompt position
          "logits_first": [256 floats],     model(input_ids).logits[0, 0]
          "logits_last":  [256 floats],     model(input_ids).logits[0, -1]
          "margin_first": f, "margin_last": f,   top-1 minus top-2 logit at those positions
          "greedy": {
            "max_new_tokens": 16,
            "generated_ids": [16 ids],      argmax loop with the KV cache, no EOS stop
            "margins": [16 floats]          top-2 margin of the logits each token was chosen from
          }
        }, ...
      ],
      "two_turn": {
        "a": [...], "b": [...], "input_ids": a + b,
        "logits_last": [256 floats],        model(a + b).logits[0, -1]
        "max_abs_diff_two_call": f          vs. model(a, use_cache) then model(b, with a's KV cache)
      }
    }

Floats are written as the shortest decimal that reads back to the same float32.

16-bit copies (parity in bf16 and f16, logits only): for llama3 and qwen3 (SIXTEEN_BIT below:
untied with llama3 rope scaling; tied with QK-norm) the same seeded weights are cast to bfloat16
and to float16 and saved with save_pretrained in that dtype (config.json says "dtype": "bfloat16"
or "float16"; model.safetensors holds BF16 or F16 tensors, ~200 KB each), into <name>-bf16/ and
<name>-f16/. Their goldens.json holds, per prompt, what transformers computes on the CPU from
that checkpoint in its own dtype (eager attention: the softmax and the RMSNorm statistics in f32,
everything else rounded to the dtype op by op, the logits in the dtype) and in float32 (the same
16-bit weights upcast exactly), so a test can tell the weights from the arithmetic:

    {
      "model": "llama3-bf16", "base": "llama3", "dtype": "bfloat16", "architecture": ...,
      "seed": ..., "torch": ..., "transformers": ..., "attn_implementation": "eager",
      "max_abs_diff_vs_f32": d,   max |logits(dtype) - logits(float32)| over every position of
                                  every prompt: the dtype's own rounding noise in transformers
      "atol": 2 d, rounded up to 2 significant digits: the bound for another implementation's
                                  16-bit logits (it and transformers are each about d from the
                                  float32 result, so within 2 d of each other)
      "prompts": [
        {
          "input_ids": [...],
          "logits_first": [256 floats],     model(input_ids).logits[0, 0] in the dtype
          "logits_last":  [256 floats],     model(input_ids).logits[0, -1] in the dtype
          "logits_f32_first": [256 floats], the same with the weights upcast to float32
          "logits_f32_last":  [256 floats]
        }, ...
      ]
    }

With torch 2.15 / transformers 5.24: d = 0.033 (llama3) and 0.036 (qwen3) in bf16, 0.0036 and
0.0058 in f16, on logits up to ~4; atol 0.066, 0.073, 0.0073, 0.012. No greedy goldens: a 16-bit
argmax flips on near ties that the rounding noise decides.

Weights are not transformers' default init (std 0.02, norms exactly 1): linear and embedding
weights and biases are normal with std 0.1 and norm weights are 1 + N(0, 0.05), so logits are O(1)
and a norm whose weight were ignored would show.

This script is the source of truth for tests/data/models. It normally runs on the GPU machine
(torch 2.11 + transformers 5.17), but any torch + transformers 5 gives the same checkpoints up to
float rounding in the goldens; everything runs on the CPU, in float32 (the 16-bit copies also in
their dtype, whose goldens another torch may move by a rounding step here and there). The output
is deterministic (one thread): rerunning it rewrites the same bytes. CI never runs it. To refresh:

    python3 -m venv /tmp/torchenv
    /tmp/torchenv/bin/pip install torch transformers safetensors
    /tmp/torchenv/bin/python scripts/models/make_tiny_models.py [--out tests/data/models]
"""

import argparse
import inspect
import json
import math
import os
import sys

import numpy as np
import torch
import transformers
from transformers import (
    Gemma3ForCausalLM,
    Gemma3TextConfig,
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    MixtralConfig,
    MixtralForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
    Qwen3MoeConfig,
    Qwen3MoeForCausalLM,
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_OUT = os.path.join(ROOT, "tests", "data", "models")

PROMPTS = [[1, 17, 42, 99, 5, 200, 3, 64], [7, 7, 7, 250, 0, 128]]
MAX_NEW_TOKENS = 16
TWO_CALL_TOL = 1e-5
# Families that also get a bf16 and an f16 copy (folders <name>-bf16, <name>-f16).
SIXTEEN_BIT = ("llama3", "qwen3")
DTYPES_16 = (("bf16", torch.bfloat16, "bfloat16"), ("f16", torch.float16, "float16"))

COMMON = dict(
    num_hidden_layers=2,
    hidden_size=64,
    intermediate_size=128,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=256,
    hidden_act="silu",
    attention_dropout=0.0,
)
# The Qwen2 and Mistral fixtures' own settings, with and without their sliding windows.
QWEN2 = dict(
    **COMMON,
    tie_word_embeddings=True,
    max_position_embeddings=256,
    rms_norm_eps=1e-6,
    rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
)
MISTRAL = dict(
    **COMMON,
    head_dim=16,
    tie_word_embeddings=False,
    max_position_embeddings=256,
    rms_norm_eps=1e-5,
    rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
)


def model_specs():
    """(name, seed, config, model class) for every fixture."""
    return [
        (
            "llama3",
            1001,
            LlamaConfig(
                **COMMON,
                head_dim=16,
                tie_word_embeddings=False,
                max_position_embeddings=256,
                rms_norm_eps=1e-5,
                rope_parameters={
                    "rope_type": "llama3",
                    "rope_theta": 500000.0,
                    "factor": 8.0,
                    "low_freq_factor": 1.0,
                    "high_freq_factor": 4.0,
                    "original_max_position_embeddings": 64,
                },
            ),
            LlamaForCausalLM,
        ),
        (
            "qwen2",
            1002,
            Qwen2Config(**QWEN2, use_sliding_window=False),
            Qwen2ForCausalLM,
        ),
        (
            # Qwen2's sliding window on the layers from max_window_layers on (here layer 1 of 2).
            "qwen2-swa",
            1009,
            Qwen2Config(**QWEN2, use_sliding_window=True, sliding_window=4, max_window_layers=1),
            Qwen2ForCausalLM,
        ),
        (
            "qwen3",
            1003,
            Qwen3Config(
                **COMMON,
                head_dim=16,
                tie_word_embeddings=True,
                max_position_embeddings=256,
                rms_norm_eps=1e-6,
                rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                use_sliding_window=False,
            ),
            Qwen3ForCausalLM,
        ),
        (
            "mistral",
            1004,
            MistralConfig(**MISTRAL, sliding_window=None),
            MistralForCausalLM,
        ),
        (
            # Mistral-7B-v0.1's sliding window (every layer), here 4 tokens: shorter than the
            # prompts and the greedy continuations.
            "mistral-swa",
            1008,
            MistralConfig(**MISTRAL, sliding_window=4),
            MistralForCausalLM,
        ),
        (
            # Sliding and full attention layers (a window of 4 tokens, shorter than the prompts),
            # local and global rope theta, query_pre_attn_scalar != head_dim, tanh GELU, the
            # extra feed-forward norms, QK-norm, both soft-cappings, tied embeddings.
            "gemma3",
            1005,
            Gemma3TextConfig(
                **{k: v for k, v in COMMON.items() if k not in ("hidden_act", "num_hidden_layers")},
                num_hidden_layers=3,
                head_dim=16,
                hidden_activation="gelu_pytorch_tanh",
                max_position_embeddings=256,
                rms_norm_eps=1e-6,
                tie_word_embeddings=True,
                query_pre_attn_scalar=24,
                sliding_window=4,
                layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                final_logit_softcapping=30.0,
                attn_logit_softcapping=50.0,
                rope_parameters={
                    "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                    "full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
                },
            ),
            Gemma3ForCausalLM,
        ),
        (
            # 4 experts, 2 chosen per token with renormalised weights, QK-norm (as Qwen3).
            "qwen3-moe",
            1006,
            Qwen3MoeConfig(
                **COMMON,
                head_dim=16,
                tie_word_embeddings=False,
                max_position_embeddings=256,
                rms_norm_eps=1e-6,
                rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                num_experts=4,
                num_experts_per_tok=2,
                moe_intermediate_size=32,
                norm_topk_prob=True,
                decoder_sparse_step=1,
                mlp_only_layers=[],
                use_sliding_window=False,
            ),
            Qwen3MoeForCausalLM,
        ),
        (
            # 4 experts, 2 chosen per token (softmax over the chosen ones).
            "mixtral",
            1007,
            MixtralConfig(
                **COMMON,
                head_dim=16,
                tie_word_embeddings=False,
                max_position_embeddings=256,
                rms_norm_eps=1e-5,
                sliding_window=None,
                num_local_experts=4,
                num_experts_per_tok=2,
                router_jitter_noise=0.0,
                rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
            ),
            MixtralForCausalLM,
        ),
    ]


def init_weights(model, seed):
    """Normal(0, 0.1) for linear/embedding weights and biases, 1 + N(0, 0.05) for norm weights."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():  # tied lm_head appears once (as the embedding)
            if "norm" in name:
                p.copy_(1.0 + 0.05 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))


def f32_list(t):
    """Shortest decimal per value that reads back to the same float32."""
    return [float(str(np.float32(v))) for v in t.detach().to(torch.float32).cpu().numpy().ravel()]


def f32(v):
    return float(str(np.float32(float(v))))


def to_json(v, indent=0):
    """JSON with one key per line but every list of numbers on a single line (small diffs)."""
    pad = " " * indent
    if isinstance(v, dict):
        items = [f'{pad} {json.dumps(k)}: {to_json(x, indent + 1).lstrip()}' for k, x in v.items()]
        return pad + "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(v, list) and not all(isinstance(x, (int, float)) for x in v):
        return pad + "[\n" + ",\n".join(to_json(x, indent + 1) for x in v) + "\n" + pad + "]"
    return pad + json.dumps(v, separators=(", ", ": "))


def margin(logits):
    top = torch.topk(logits, 2).values
    return f32(top[0] - top[1])


def forward(model, ids, cache=None):
    """model(ids, use_cache=True) continuing `cache`; returns (last-position logits, cache).

    transformers renamed the forward argument and output field past_key_values to cache in a 5.x
    release (5.24 warns on the old name), so use whichever this version takes.
    """
    kw = "cache" if "cache" in inspect.signature(type(model).forward).parameters else "past_key_values"
    args = {kw: cache} if cache is not None else {}
    out = model(torch.tensor([ids]), use_cache=True, **args)
    new_cache = getattr(out, "cache", None)
    if new_cache is None:
        new_cache = out.past_key_values
    return out.logits[0, -1], new_cache


@torch.no_grad()
def greedy(model, ids):
    """Argmax loop with the KV cache: prefill, then one token per call; no EOS stop."""
    logits, cache = forward(model, ids)
    generated, margins = [], []
    for _ in range(MAX_NEW_TOKENS):
        tok = int(torch.argmax(logits))
        generated.append(tok)
        margins.append(margin(logits))
        logits, cache = forward(model, [tok], cache)
    return generated, margins


@torch.no_grad()
def check_generate(model, ids, expected):
    """model.generate must agree with the manual loop (EOS stopping turned off)."""
    gc = transformers.GenerationConfig(
        do_sample=False, max_new_tokens=MAX_NEW_TOKENS, min_new_tokens=0,
        eos_token_id=None, pad_token_id=0, bos_token_id=None)
    # (a None in `gc` reads as unset: the checkpoint's own eos_token_id would still stop it)
    saved = model.generation_config.eos_token_id
    model.generation_config.eos_token_id = None
    out = model.generate(torch.tensor([ids]), generation_config=gc,
                         attention_mask=torch.ones(1, len(ids), dtype=torch.long))
    model.generation_config.eos_token_id = saved
    got = out[0, len(ids):].tolist()
    assert got == expected, f"generate {got} != manual loop {expected}"


def build(seed, config, cls):
    """The float32 model with this fixture's weights (init_weights), eval mode, eager attention."""
    torch.manual_seed(seed)
    config.dtype = torch.float32
    model = cls(config).to(torch.float32)
    init_weights(model, seed)
    model.eval()
    model.config._attn_implementation = "eager"
    if config.tie_word_embeddings:
        assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    return model


@torch.no_grad()
def make_one(name, seed, config, cls, out_dir):
    model = build(seed, config, cls)

    folder = os.path.join(out_dir, name)
    os.makedirs(folder, exist_ok=True)
    model.save_pretrained(folder, safe_serialization=True)

    # Reload from disk so the goldens come from exactly what was saved.
    model = cls.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager").eval()

    prompts = []
    for ids in PROMPTS:
        logits = model(torch.tensor([ids])).logits[0]
        gen_ids, gen_margins = greedy(model, ids)
        check_generate(model, ids, gen_ids)
        prompts.append({
            "input_ids": ids,
            "argmax": torch.argmax(logits, dim=-1).tolist(),
            "logits_first": f32_list(logits[0]),
            "logits_last": f32_list(logits[-1]),
            "margin_first": margin(logits[0]),
            "margin_last": margin(logits[-1]),
            "greedy": {"max_new_tokens": MAX_NEW_TOKENS, "generated_ids": gen_ids,
                       "margins": gen_margins},
        })

    a, b = PROMPTS
    one_call = model(torch.tensor([a + b])).logits[0, -1]
    _, cache = forward(model, a)
    two_call, _ = forward(model, b, cache)
    diff = float((one_call - two_call).abs().max())
    assert diff <= TWO_CALL_TOL, f"{name}: two-call prefill differs from one call by {diff}"

    goldens = {
        "model": name,
        "architecture": cls.__name__,
        "seed": seed,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "attn_implementation": "eager",
        "prompts": prompts,
        "two_turn": {"a": a, "b": b, "input_ids": a + b, "logits_last": f32_list(one_call),
                     "max_abs_diff_two_call": diff},
    }
    with open(os.path.join(folder, "goldens.json"), "w") as f:
        f.write(to_json(goldens) + "\n")

    all_margins = [m for p in prompts for m in p["greedy"]["margins"]]
    print(f"{name}: {sum(p.numel() for p in model.parameters())} params, "
          f"min greedy margin {min(all_margins):.4g}, two-call diff {diff:.3g}, "
          f"greedy {[p['greedy']['generated_ids'] for p in prompts]}")


def round_up(v, digits=2):
    """v rounded up to `digits` significant digits (a bound that stays a bound)."""
    e = math.floor(math.log10(v)) - digits + 1
    return float(f"{math.ceil(v / 10**e - 1e-9) * 10**e:.{digits}g}")


@torch.no_grad()
def make_16bit(name, seed, config, cls, suffix, dtype, dtype_name, out_dir):
    """<name>-<suffix>/: the fixture's weights saved in `dtype`, with logits-only goldens."""
    model = build(seed, config, cls).to(dtype)
    model.config.dtype = dtype
    folder = os.path.join(out_dir, f"{name}-{suffix}")
    os.makedirs(folder, exist_ok=True)
    model.save_pretrained(folder, safe_serialization=True)

    # From disk, in the dtype and upcast to float32 (exact: every 16-bit value is a float32).
    low = cls.from_pretrained(folder, dtype=dtype, attn_implementation="eager").eval()
    high = cls.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager").eval()
    assert next(low.parameters()).dtype == dtype
    prompts, worst = [], 0.0
    for ids in PROMPTS:
        got = low(torch.tensor([ids])).logits[0]
        assert got.dtype == dtype, got.dtype
        got = got.to(torch.float32)
        ref = high(torch.tensor([ids])).logits[0]
        worst = max(worst, float((got - ref).abs().max()))
        prompts.append({
            "input_ids": ids,
            "logits_first": f32_list(got[0]),
            "logits_last": f32_list(got[-1]),
            "logits_f32_first": f32_list(ref[0]),
            "logits_f32_last": f32_list(ref[-1]),
        })
    goldens = {
        "model": f"{name}-{suffix}",
        "base": name,
        "dtype": dtype_name,
        "architecture": cls.__name__,
        "seed": seed,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "attn_implementation": "eager",
        "max_abs_diff_vs_f32": f32(worst),
        "atol": round_up(2 * worst),
        "prompts": prompts,
    }
    with open(os.path.join(folder, "goldens.json"), "w") as f:
        f.write(to_json(goldens) + "\n")
    print(f"{name}-{suffix}: {dtype_name} vs float32 logits differ by up to {worst:.3g}, "
          f"atol {goldens['atol']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT, help="output folder (default %(default)s)")
    ap.add_argument("--only", nargs="*", help="write only these fixtures (default: all)")
    args = ap.parse_args()
    torch.set_num_threads(1)  # deterministic reductions, and the machine is small
    print(f"torch {torch.__version__}, transformers {transformers.__version__}", file=sys.stderr)
    specs = [m for m in model_specs() if not args.only or m[0] in args.only]
    for name, seed, config, cls in specs:
        make_one(name, seed, config, cls, args.out)
    for name, seed, config, cls in specs:
        if name in SIXTEEN_BIT:
            for suffix, dtype, dtype_name in DTYPES_16:
                make_16bit(name, seed, config, cls, suffix, dtype, dtype_name, args.out)


if __name__ == "__main__":
    main()

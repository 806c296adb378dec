"""The tiny transformers models of each family (Llama, Qwen3, Mistral, Qwen2, Gemma 3, and the
mixtures of experts Mixtral and Qwen3-MoE) through torch.compile(backend="luminal")."""

import json
import os
import pathlib

import pytest
import torch

import luminal.torch_backend as lt


if os.environ.get("LUMINAL_REQUIRE_TORCH") == "1":
    import transformers
else:
    transformers = pytest.importorskip("transformers")

ROOT = pathlib.Path(os.environ.get("LUMINAL_SOURCE_DIR", pathlib.Path(__file__).parents[3]))
MODELS = ROOT / "tests" / "data" / "models"


@pytest.mark.parametrize("name", ["llama3", "qwen3", "mistral", "qwen2", "gemma3", "mixtral", "qwen3-moe"])
def test_tiny_model_logits_and_greedy_tokens(name, counted):
    folder = MODELS / name
    goldens = json.loads((folder / "goldens.json").read_text())["prompts"][0]
    model = transformers.AutoModelForCausalLM.from_pretrained(
        folder, attn_implementation="eager"
    ).eval()
    make, calls = counted
    fast = torch.compile(model, backend=make(), dynamic=True)
    ids = torch.tensor([goldens["input_ids"]])
    with torch.no_grad():
        got = fast(input_ids=ids, use_cache=False).logits
        first = len(calls)  # Dynamo's graphs for this model (graph breaks split it)
        want = model(input_ids=ids, use_cache=False).logits
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
        assert got[0].argmax(-1).tolist() == goldens["argmax"]
        # Greedy decoding without a cache: every step is a new sequence length.
        seq, ref = ids, ids
        for _ in range(6):
            nxt = fast(input_ids=seq, use_cache=False).logits[:, -1].argmax(-1, keepdim=True)
            seq = torch.cat([seq, nxt], 1)
            nref = model(input_ids=ref, use_cache=False).logits[:, -1].argmax(-1, keepdim=True)
            ref = torch.cat([ref, nref], 1)
    assert seq.tolist() == ref.tolist()
    assert len(calls) == first, f"{len(calls) - first} more Dynamo compiles for new lengths"
    r = lt.report()
    assert 1 <= r["compiles"] <= first and r["fallback"] == {}, r["fallback"]
    # The model's graph (the one with the weights) is one luminal piece.
    assert max(g["piece_nodes"][0] for g in r["graphs"] if g["pieces"]) > 200


@pytest.mark.parametrize("name", ["qwen3", "qwen3-moe"])
def test_generate_with_the_kv_cache(counted, name):
    """transformers' generate() with its DynamicCache: prefill and decode steps whose cache
    length grows, through the compiled forward; the tokens equal eager's (the MoE's decode steps
    group a token's experts as its prefill groups every token's)."""
    folder = MODELS / name
    model = transformers.AutoModelForCausalLM.from_pretrained(
        folder, attn_implementation="eager"
    ).eval()
    ids = torch.tensor([[1, 17, 42, 99, 5, 200, 3, 64]])
    with torch.no_grad():
        want = model.generate(ids, max_new_tokens=10, do_sample=False)
        make, calls = counted
        model.forward = torch.compile(model.forward, backend=make(), dynamic=True)
        got = model.generate(ids, max_new_tokens=4, do_sample=False)
        assert got.tolist() == want[:, :12].tolist()
        first = len(calls)
        got = model.generate(ids, max_new_tokens=10, do_sample=False)
    assert got.tolist() == want.tolist()
    assert len(calls) == first, "longer caches compiled again"
    assert lt.report()["fallback"] == {}


def static_cache_generate(counted, dynamic):
    """The tiny Llama's generate() with transformers' StaticCache, eager and compiled with
    `dynamic`: (model, compiled tokens, eager tokens)."""
    model = transformers.AutoModelForCausalLM.from_pretrained(
        MODELS / "llama3", attn_implementation="eager"
    ).eval()
    ids = torch.tensor([[1, 17, 42, 99, 5, 200, 3, 64]])
    with torch.no_grad():
        want = model.generate(ids, max_new_tokens=6, do_sample=False, cache_implementation="static")
        make, _calls = counted
        model.forward = torch.compile(model.forward, backend=make(), dynamic=dynamic)
        got = model.generate(ids, max_new_tokens=6, do_sample=False, cache_implementation="static")
    return model, got, want


def test_generate_with_a_static_cache_is_one_piece(counted):
    """generate() with transformers' StaticCache: its in-place cache writes (index_put after
    functionalization) convert, so each compiled forward is one luminal piece, no eager ops."""
    model, got, want = static_cache_generate(counted, dynamic=True)
    assert got.tolist() == want.tolist()
    r = lt.report()
    assert r["fallback"] == {} and r["graphs"] and all(g["pieces"] == 1 for g in r["graphs"]), r
    # Under dynamic=True the caches' length is a dim whose range reaches far past them; they are
    # still the sessions' state in their own memory, never copied back: a decode step reads back
    # its logits only.
    pieces = [p for ps in lt._report.pieces for p in ps]
    assert pieces and not any(p.copy_back for p in pieces)
    step = pieces[-1].session.stats()
    assert step["bytes_downloaded"] == step["executes"] * model.config.vocab_size * 4, step


def test_a_static_cache_at_static_shapes_is_written_in_place(counted):
    """The same generate() compiled at static shapes (a graph for the prompt, one for a step):
    every cache tensor is the session's carried state in its own memory (none copied back), so
    a step uploads nothing and reads back only the logits."""
    model, got, want = static_cache_generate(counted, dynamic=False)
    assert got.tolist() == want.tolist()
    r = lt.report()
    assert r["fallback"] == {} and all(g["pieces"] == 1 for g in r["graphs"]), r
    pieces = [p for ps in lt._report.pieces for p in ps]
    assert pieces and not any(p.copy_back for p in pieces)
    # The step's graph writes a k and a v cache a layer (and the cache's 0-dim counters).
    step_piece = pieces[-1]
    caches = [
        label
        for label, node in step_piece.cx.inputs
        if label in step_piece.mutations and node.meta["val"].ndim == 4
    ]
    assert len(caches) == 2 * model.config.num_hidden_layers, step_piece.mutations
    step = step_piece.session.stats()  # the decode step's graph, run 5 times
    logits = model.config.vocab_size * 4
    assert step["executes"] == 5 and step["bytes_uploaded"] == 0, step
    assert step["bytes_downloaded"] == 5 * logits, step


# More of transformers' families, from tiny configs of random weights (no files): each converts
# whole (GPT-2 and Phi divide with true_divide; Phi-3 slices an empty pass-through half; Gemma 2
# soft-caps; Qwen2-MoE adds shared experts; DeepSeek-V3 assembles q by slice writes and routes by
# groups of experts).
SMALL = dict(
    hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, vocab_size=256, max_position_embeddings=128,
)
FAMILIES = {
    "gpt2": dict(n_embd=64, n_layer=2, n_head=4, vocab_size=256, n_positions=128),
    "phi": SMALL,
    "phi3": dict(SMALL, pad_token_id=0),
    "gemma2": dict(SMALL, head_dim=16),
    "qwen2_moe": dict(
        SMALL, num_experts=8, num_experts_per_tok=2, moe_intermediate_size=32,
        shared_expert_intermediate_size=64,
    ),
    "gpt_neox": dict(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        vocab_size=256,
    ),
    "deepseek_v3": dict(
        SMALL, num_key_value_heads=4, n_routed_experts=8, num_experts_per_tok=2,
        moe_intermediate_size=32, n_shared_experts=1, first_k_dense_replace=1, kv_lora_rank=16,
        q_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16, n_group=2,
        topk_group=1,
    ),
    "falcon": dict(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, vocab_size=256,
        new_decoder_architecture=True, num_kv_heads=2,
    ),
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_more_families_convert_whole(family, counted):
    torch.manual_seed(0)
    cfg = transformers.AutoConfig.for_model(family, **FAMILIES[family])
    model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").eval()
    make, _ = counted
    fast = torch.compile(model, backend=make(), dynamic=True)
    with torch.no_grad():
        for s in (12, 7):
            ids = torch.randint(0, cfg.vocab_size, (1, s))
            got = fast(input_ids=ids, use_cache=False).logits
            want = model(input_ids=ids, use_cache=False).logits
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    r = lt.report()
    assert r["fallback"] == {}, r["fallback"]
    assert all(g["pieces"] <= 1 for g in r["graphs"]), r["graphs"]


def _encoder_models():
    """Encoders and encoder-decoders from tiny configs: (name, model, inputs)."""
    small = dict(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        vocab_size=256, max_position_embeddings=64, pad_token_id=0,
    )
    ids = torch.randint(1, 256, (1, 12))
    yield "bert", transformers.BertModel(transformers.BertConfig(**small)), dict(input_ids=ids)
    t5 = transformers.T5Config(d_model=64, d_ff=128, num_layers=2, num_heads=4, vocab_size=256, d_kv=16)
    yield "t5", transformers.T5ForConditionalGeneration(t5), dict(
        input_ids=ids, decoder_input_ids=ids[:, :5]
    )
    vit = transformers.ViTConfig(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        image_size=32, patch_size=8,
    )
    yield "vit", transformers.ViTModel(vit), dict(pixel_values=torch.randn(1, 3, 32, 32))
    whisper = transformers.WhisperConfig(
        pad_token_id=0, decoder_start_token_id=1, d_model=64, encoder_layers=1, decoder_layers=1,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
        decoder_ffn_dim=128, vocab_size=256, num_mel_bins=16, max_source_positions=16,
        max_target_positions=16,
    )
    yield "whisper", transformers.WhisperForConditionalGeneration(whisper), dict(
        input_features=torch.randn(1, 16, 32), decoder_input_ids=ids[:, :4]
    )


def test_encoders_and_encoder_decoders_convert_whole(counted):
    """BERT, T5, ViT (its patches a convolution) and Whisper (its overlapping convolutions in
    eager; a decoder position table of 16, shorter than the size a dynamic dim is timed at by
    default, so its bucket is timed at the call's size instead)."""
    torch.manual_seed(0)
    make, _ = counted
    for name, model, inputs in _encoder_models():
        torch._dynamo.reset()
        lt.reset()
        model = model.eval()
        fast = torch.compile(model, backend=make(), dynamic=True)
        with torch.no_grad():
            got, want = fast(**inputs), model(**inputs)
        g = got.logits if getattr(got, "logits", None) is not None else got.last_hidden_state
        w = want.logits if getattr(want, "logits", None) is not None else want.last_hidden_state
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-4, msg=name)
        r = lt.report()
        # Whisper's overlapping conv1d stays in eager (faster there); the rest is whole.
        allowed = {"aten.convolution.default"} if name == "whisper" else set()
        assert set(r["fallback"]) <= allowed, (name, r["fallback"])

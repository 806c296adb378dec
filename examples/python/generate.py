"""Chat with a GGUF (or Hugging Face folder) model, streaming the answer.

    PYTHONPATH=build/python python3 examples/python/generate.py [MODEL] [PROMPT]

MODEL defaults to the SmolLM2-135M-Instruct GGUF that `make run` fetches; without it, the tiny
test model in tests/data (random weights: the text is gibberish, the machinery is the same).
"""

import os
import pathlib
import sys

import luminal

root = pathlib.Path(__file__).resolve().parents[2]
cache = pathlib.Path(os.environ.get("XDG_CACHE_HOME", pathlib.Path.home() / ".cache"))
smollm2 = cache / "luminal" / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
default = smollm2 if smollm2.exists() else root / "tests/data/gguf/models/llama3-f32.gguf"
path = sys.argv[1] if len(sys.argv) > 1 else default
prompt = sys.argv[2] if len(sys.argv) > 2 else "Give me three short tips for writing clear code."

model = luminal.load(path)  # the GPU when there is one, else the CPU
for piece in model.chat(prompt, max_tokens=128):
    print(piece, end="", flush=True)
print(f"\n[{len(model.last['tokens'])} tokens, stop: {model.last['stop']}]")

# Plain completion with sampling (seeded: the same seed gives the same text).
text = "".join(model.generate("Once upon a time", 32, temperature=0.7, top_p=0.9, seed=1))
print(text)

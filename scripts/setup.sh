#!/usr/bin/env bash
# Installs what building and testing luminal-cpp needs on a fresh Debian 12 / Ubuntu machine.
# Idempotent and quiet when everything is already there. With --torch (what `make test` runs)
# also PyTorch and transformers for the torch.compile tests: a large download that `make run`
# and the build do not need.
set -euo pipefail

need_pkgs=()
have() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for p in cmake ninja-build g++ make libgtest-dev libgmock-dev ccache libopenblas-dev \
  nlohmann-json3-dev libpcre2-dev libicu-dev libcli11-dev clang libclang-rt-14-dev python3-pip \
  python3-dev python3-venv; do
  have "$p" || need_pkgs+=("$p")
done

if [ ${#need_pkgs[@]} -gt 0 ]; then
  echo "setup: installing ${need_pkgs[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
fi

# Python packages that generate the test fixtures (scripts/fixtures/): the reference
# implementations our safetensors reader, tokenizers and chat templates are compared with; and
# nanobind + pytest for the Python package (python/) and its tests.
py_pkgs="safetensors tokenizers jinja2 numpy nanobind pytest"
if ! python3 -c "import safetensors, tokenizers, jinja2, numpy, nanobind, pytest" 2>/dev/null; then
  echo "setup: installing Python packages $py_pkgs"
  # shellcheck disable=SC2086
  python3 -m pip install -q $py_pkgs 2>/dev/null ||
    python3 -m pip install -q --break-system-packages $py_pkgs
fi

# PyTorch and transformers for the torch.compile backend's tests (python/tests/torch_compile, the
# ctest python_torch_tests): a virtual environment in the user's cache, made once and reused, that also
# sees the packages above (--system-site-packages). It must be the Python the extension is built
# for (the same python3). LUMINAL_TORCH_INDEX names a pip index to take torch from (e.g. PyTorch's
# CPU-only wheel index, much smaller than the default wheel); unset, pip's default index is used.
[ "${1:-}" = "--torch" ] || exit 0
torch_venv="${LUMINAL_TORCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/luminal/torch-venv}"
if ! "$torch_venv/bin/python" -c "import torch, transformers" 2>/dev/null; then
  echo "setup: installing torch and transformers into $torch_venv (once; a large download)"
  python3 -m venv --system-site-packages "$torch_venv"
  torch_index=()
  if [ -n "${LUMINAL_TORCH_INDEX:-}" ]; then torch_index=(--index-url "$LUMINAL_TORCH_INDEX"); fi
  "$torch_venv/bin/python" -m pip install -q "${torch_index[@]}" torch
  "$torch_venv/bin/python" -m pip install -q transformers
  "$torch_venv/bin/python" -c "import torch, transformers" ||
    { echo "setup: torch or transformers did not install into $torch_venv" >&2; exit 1; }
fi

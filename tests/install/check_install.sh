#!/usr/bin/env bash
# Checks that luminal::luminal works for users both ways:
#   1. cmake --install, then find_package(luminal) in a separate project;
#   2. add_subdirectory(luminal-cpp) in a separate project.
# Usage: check_install.sh SOURCE_DIR BUILD_DIR WORK_DIR BUILD_TYPE
set -euo pipefail
src=$1 build=$2 work=$3 type=$4
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$src/tests/install/consumer" -B "$work/find" -G Ninja -DCMAKE_BUILD_TYPE="$type" \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/find" >/dev/null
"$work/find/consumer"
cmake -S "$src/tests/install/consumer" -B "$work/sub" -G Ninja -DCMAKE_BUILD_TYPE="$type" \
  -DLUMINAL_SOURCE_DIR="$src" -DLUMINAL_WERROR=ON >/dev/null
cmake --build "$work/sub" >/dev/null
"$work/sub/consumer"

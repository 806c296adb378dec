# Sourced by the scripts/gpu-*.sh scripts on a GPU machine, from the repository root (not run
# alone): the summary line, the PCRE2/ICU install from carried .debs, and one timed test suite.
# note and suite append to $summary when it is set; suite sets failed=1 when a suite fails.

note() { echo "$*" | tee -a "${summary:-/dev/null}"; }

# gpu_begin OUT: every script's start. OUT made (and absolute), $summary (OUT/summary.txt) emptied,
# $build and $jobs from BUILD (default build-gpu) and JOBS (default all cores).
gpu_begin() {
  mkdir -p "$1"
  out=$(cd "$1" && pwd)
  summary="$out/summary.txt"
  : >"$summary"
  build=${BUILD:-build-gpu}
  jobs=${JOBS:-$(nproc)}
}

# PCRE2 and ICU headers (the io library) from carried .debs when the machine lacks them.
install_debs() {
  if ! pkg-config --exists icu-uc libpcre2-8 2>/dev/null && ls .debs/*.deb >/dev/null 2>&1; then
    for f in .debs/*.deb; do dpkg -x "$f" /; done
    ldconfig
    note "installed PCRE2/ICU from .debs"
  fi
}

build_targets() {  # build_targets TARGET...: configure $build, build them into $out/build.log
  {
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release &&
      cmake --build "$build" -j "$jobs" --target "$@"
  } >"$out/build.log" 2>&1 || { tail -40 "$out/build.log"; return 1; }
}

suite() {  # suite NAME LOG TIMEOUT CMD...
  local name=$1 log=$2 limit=$3
  shift 3
  local t0=$(date +%s)
  # A script stopped from outside (the device call's own `timeout`) stops the suite it runs:
  # `timeout` puts the suite in a process group of its own, which a signal to the script does not
  # reach, and a bench left running holds the machine for the next call. The suite runs in the
  # background and is waited for, since bash runs a trap only once a foreground command ends.
  trap 'pkill -TERM -P $$ 2>/dev/null; wait; exit 143' TERM INT
  timeout -k 20 "$limit" "$@" >>"$log" 2>&1 &
  wait $!
  local rc=$?
  trap - TERM INT
  local counts
  counts=$(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$log" | tr -s ' ' | tr '\n' ' ')
  note "$name: rc=$rc in $(($(date +%s) - t0)) s  $counts"
  [ $rc -eq 0 ] || failed=1
}

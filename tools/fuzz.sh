#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/, Clang with ASan + UBSan, in build-asan/) and runs
# each for SECONDS, two at a time, seeded with the shipped files. A crash, a sanitizer report,
# a leak, a timeout (10 s per input) or more than 2 GB of memory is a finding: its input is
# saved under build-asan/fuzz/findings/TARGET/ and the script exits 1.
# Usage: tools/fuzz.sh SECONDS [TARGET ...]   (targets: model cluster gpu calibration job_flags
#                                               validation bench nccl_tests check megatron nemo
#                                               deepspeed; default all)
# SECONDS 0 configures build-asan and builds the targets without running them.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:?usage: tools/fuzz.sh SECONDS [TARGET ...]}
shift
case "$seconds" in '' | *[!0-9]*) echo "tools/fuzz.sh: SECONDS: expected a whole number, got \"$seconds\"" >&2; exit 2 ;; esac
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(model cluster gpu calibration job_flags validation bench nccl_tests check megatron nemo deepspeed)

bash tools/install-deps.sh
# build-asan is Clang's (the preset); a cache another compiler wrote cannot be reconfigured.
if [ -f build-asan/CMakeCache.txt ] && ! grep -q '^CMAKE_CXX_COMPILER:.*clang' build-asan/CMakeCache.txt; then
  rm -rf build-asan
fi
werror=OFF
[ "${CI:-}" = "true" ] && werror=ON
cmake --preset asan -DDTSIM_FUZZ=ON -DDTSIM_WERROR=$werror >/dev/null
fuzzers=()
for t in "${targets[@]}"; do fuzzers+=("${t}_fuzz"); done
cmake --build build-asan -j"$(nproc)" --target "${fuzzers[@]}"
[ "$seconds" -eq 0 ] && exit 0  # SECONDS 0: configure and build only

# Seeds: the files dtsim ships (and the shared validation data beside the checkout, if present).
seeds() {
  case "$1" in
    model) ls models/*.json tests/fixtures/hf/*/config.json ;;
    cluster) ls topologies/*.json tests/fixtures/clusters/*.json ;;
    gpu) ls topologies/gpus/*.json ;;
    calibration) ls calibration/*.json ;;
    job_flags) ls tests/fuzz/seeds/job_flags/* ;;
    validation) ls tests/fuzz/seeds/validation/*; ls ../shared/validation/measured_runs.json 2>/dev/null || true ;;
    bench) ls tests/fuzz/seeds/bench/* ;;
    nccl_tests) ls calibration/nccl/*.txt; ls ../shared/validation/nccl_logs/*.txt 2>/dev/null || true ;;
    check) ls examples/checks.json ;;
    megatron) ls examples/imports/*.sh ;;
    nemo) ls examples/imports/*.yaml ;;
    deepspeed) ls examples/imports/*.json ;;
    *) echo "tools/fuzz.sh: TARGET: expected one of model cluster gpu calibration job_flags validation bench nccl_tests check megatron nemo deepspeed, got \"$1\"" >&2
       return 2 ;;
  esac
}

out=build-asan/fuzz
run() {
  local t=$1 corpus=$out/corpus/$1 found=$out/findings/$1
  mkdir -p "$corpus" "$found"
  local list
  list=$(seeds "$t") || return 2
  # shellcheck disable=SC2086
  cp $list "$corpus"/ 2>/dev/null || true
  export DTSIM_DATA_DIR=$PWD
  if "$out/${t}_fuzz" "$corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
       -print_final_stats=1 -artifact_prefix="$found/" >"$out/$t.log" 2>&1; then
    echo "$t: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$out/$t.log" | grep -o '[0-9]*$') runs in ${seconds} s, no finding"
  else
    echo "$t: FINDING (log $out/$t.log, input in $found/):"
    grep -m3 -E 'ERROR|terminate|Assertion|runtime error|deadly signal|timeout' "$out/$t.log" | sed 's/^/  /'
    return 1
  fi
}

status=0
pids=()
for t in "${targets[@]}"; do
  run "$t" &
  pids+=($!)
  if [ ${#pids[@]} -ge "$(nproc)" ]; then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit $status

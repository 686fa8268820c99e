#!/usr/bin/env bash
# The README's second quick-start command: installs what is missing, builds, and runs every test:
#  1. the Catch2 suite, the project's dtsim check file and the tool tests on the release build;
#  2. the same suite built with Clang, AddressSanitizer and UBSan (the asan preset, build-asan/);
#  3. every libFuzzer target for FUZZ_SECONDS (default 15) from the shipped seeds (tools/fuzz.sh).
# DTSIM_QUICK=1 runs step 1 only.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
tools/setup.sh
ctest --test-dir build --output-on-failure -j2
echo "test.sh: release suite passed ($((SECONDS - start)) s)"
[ "${DTSIM_QUICK:-0}" = "1" ] && exit 0
tools/fuzz.sh 0  # configures build-asan (Clang, ASan + UBSan) and builds the fuzzers
cmake --build build-asan -j"$(nproc)"
# UBSan reports fail the run (-fno-sanitize-recover); SimGrid's own allocations at exit are not leaks of ours.
# The API consumer test compiles a separate CMake project (a packaging check the release suite runs);
# under the sanitizers it is two minutes of compiling and nothing to sanitize.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j2 -E '^api: example consumer'
echo "test.sh: ASan + UBSan suite passed ($((SECONDS - start)) s)"
tools/fuzz.sh "${FUZZ_SECONDS:-15}"
echo "test.sh: fuzzers found nothing ($((SECONDS - start)) s)"

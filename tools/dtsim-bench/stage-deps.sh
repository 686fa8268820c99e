#!/bin/bash
# Copies the header-only dependencies of dtsim-bench (nlohmann/json, CLI11: Debian packages
# nlohmann-json3-dev, libcli11-dev) with their CMake package files into DIR (default .deps), so a
# GPU machine without those packages can build the benchmark from a copy of this tree:
#   tools/dtsim-bench/stage-deps.sh .deps
#   cmake -S tools/dtsim-bench -B build-bench -DCMAKE_PREFIX_PATH=$PWD/.deps && cmake --build build-bench
set -euo pipefail
dir=${1:-.deps}
for f in /usr/include/nlohmann/json.hpp /usr/include/CLI/CLI.hpp /usr/share/cmake/nlohmann_json \
         /usr/share/cmake/CLI11; do
  [ -e "$f" ] || { echo "stage-deps: $f: expected the Debian packages nlohmann-json3-dev and libcli11-dev" >&2; exit 2; }
done
mkdir -p "$dir/include" "$dir/share/cmake"
cp -r /usr/include/nlohmann /usr/include/CLI "$dir/include/"
cp -r /usr/share/cmake/nlohmann_json /usr/share/cmake/CLI11 "$dir/share/cmake/"
echo "staged nlohmann/json and CLI11 in $dir"

#!/usr/bin/env bash
# Installs missing Debian packages, then configures and builds dtsim into build/.
# Warnings are errors when CI=true. Usage: tools/setup.sh [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
werror=OFF
[ "${CI:-}" = "true" ] && werror=ON
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DDTSIM_WERROR=$werror "$@" >/dev/null
cmake --build build -j"$(nproc)"

#!/usr/bin/env bash
# Installs the Debian packages dtsim builds against, only those missing.
# Idempotent: runs `apt-get update` only when something has to be installed.
set -euo pipefail

# libopenmpi-dev and openmpi-bin: dtsim-bench nccl's MPI launcher (built only where CMake finds MPI).
# clang and libclang-rt-14-dev: the asan preset (ASan + UBSan) and the libFuzzer targets.
# python3-dev and pybind11-dev: the dtsim Python module. dpkg-dev: cpack's .deb dependencies.
# libyaml-dev: NeMo recipe import.
packages=(g++ cmake make pkg-config nlohmann-json3-dev libcli11-dev catch2 libsimgrid-dev python3 libopenmpi-dev
          openmpi-bin clang libclang-rt-14-dev python3-dev pybind11-dev dpkg-dev libyaml-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"

#!/usr/bin/env bash
# Packs NVRTC 12's two libraries, libnvrtc.so.12 and its builtins (from the `nvidia-cuda-nvrtc-cu12`
# wheel, 12.9), into .carry-nvrtc12/nvrtc12.tar.xz (about 31 MB), to carry to a GPU machine where
# nothing can be installed and run the ladder with NVRTC 12 there:
#
#   mkdir -p /tmp/nvrtc12 && tar -C /tmp/nvrtc12 -xJf .carry-nvrtc12/nvrtc12.tar.xz
#   LD_LIBRARY_PATH=/tmp/nvrtc12 GEMM_LADDER_CUDA_MAJOR=12 ./ladder --no-record --check
#
# The first line of the run names the NVRTC it loaded, with its file. The wheel is installed into a
# venv outside the crate (argument 1, or a folder in $TMPDIR), never into the folder that is carried.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-${TMPDIR:-/tmp}/gemm-ladder-nvrtc12-venv}
[ -x "$venv/bin/python3" ] || python3 -m venv "$venv"
"$venv/bin/python3" -m pip install --quiet --disable-pip-version-check "nvidia-cuda-nvrtc-cu12==12.9.*"
lib="$("$venv/bin/python3" -c 'import nvidia; print(list(nvidia.__path__)[0])')/cuda_nvrtc/lib"
builtins=$(cd "$lib" && ls libnvrtc-builtins.so.12.*)
mkdir -p .carry-nvrtc12
tar -C "$lib" -cJf .carry-nvrtc12/nvrtc12.tar.xz libnvrtc.so.12 $builtins
ls -l .carry-nvrtc12/nvrtc12.tar.xz

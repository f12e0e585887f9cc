#!/usr/bin/env bash
# Installs, by name from Debian 12's archive, every package DiT Studio's build and tests need.
# Idempotent: packages already present are left alone, and nothing runs apt when all are there.
# Usage: packaging/install-deps.sh [--no-gui]   (--no-gui: engine and workers only)
set -euo pipefail

build=(cmake ninja-build g++ pkg-config git)
engine=(
  libtorch-dev            # LibTorch 1.13 (CPU) with c10d
  libgloo-dev             # Gloo backend for c10d on CPU
  libopenblas0-pthread    # fast BLAS for libtorch: the default reference BLAS is ~30x slower
  nlohmann-json3-dev      # JSON for configs, job files and events
  libsentencepiece-dev    # T5 tokenizer
  libavcodec-dev libavformat-dev libavutil-dev libswscale-dev   # clip export (MP4, WebM, GIF)
)
tests=(
  clang libclang-rt-14-dev  # libFuzzer, for the event-protocol fuzz test
  iproute2                  # ip netns: the two-machine test
)
gui=(qt6-base-dev qt6-base-dev-tools libqt6sql6-sqlite libqcustomplot-dev libqcustomplot2.1-qt6 libgl-dev xvfb)

want=("${build[@]}" "${engine[@]}" "${tests[@]}")
[[ "${1:-}" == "--no-gui" ]] || want+=("${gui[@]}")

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  sudo=""; [[ $(id -u) -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# libtorch follows the libblas.so.3 alternative; make sure OpenBLAS's is the one selected.
blas=$(update-alternatives --query libblas.so.3-x86_64-linux-gnu 2>/dev/null | awk '/^Value:/{print $2}')
case "$blas" in
  *openblas*) ;;
  *) echo "install-deps: libblas.so.3 is '$blas'; selecting OpenBLAS"
     sudo=""; [[ $(id -u) -eq 0 ]] || sudo="sudo"
     alt=$(update-alternatives --list libblas.so.3-x86_64-linux-gnu | grep openblas | head -1)
     [[ -n "$alt" ]] && $sudo update-alternatives --set libblas.so.3-x86_64-linux-gnu "$alt" ;;
esac
echo "install-deps: all dependencies present"

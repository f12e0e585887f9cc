#!/usr/bin/env bash
# Installs every package DiT Studio's build and tests need: Debian 12's packages by name, and LibTorch 2.x
# (the pinned version in packaging/torch-version) from PyPI's torch wheel into .deps/ (see below).
# Idempotent: what is already present is left alone, and nothing runs apt when all is there.
# Usage: packaging/install-deps.sh [--no-gui] [--system-torch]
#   --no-gui: engine and workers only; --system-torch: Debian's LibTorch 1.13 only (no download from PyPI).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
gui_wanted=1 wheel_wanted=1
for a in "$@"; do
  case "$a" in
    --no-gui) gui_wanted=0 ;;
    --system-torch) wheel_wanted=0 ;;
    *) echo "install-deps: unknown option '$a' (use --no-gui, --system-torch)" >&2; exit 2 ;;
  esac
done

build=(cmake ninja-build g++ pkg-config git python3
  ccache                    # rebuilds, and CI's fresh clones, reuse what was compiled before
  librsvg2-bin help2man     # the icons from our SVG, the man pages from --help
)
engine=(
  libtorch-dev            # LibTorch 1.13 (CPU) with c10d
  libgloo-dev             # Gloo backend for c10d on CPU
  libopenblas0-pthread    # fast BLAS for libtorch: the default reference BLAS is ~30x slower
  nlohmann-json3-dev      # JSON for configs, job files and events
  libsentencepiece-dev    # T5 tokenizer
  libavcodec-dev libavformat-dev libavutil-dev libswscale-dev   # clip export (MP4, WebM, GIF)
  libcurl4-openssl-dev libssl-dev   # dit-models: the Hub's HTTP API, and sha256 of what it downloads
)
tests=(
  libgtest-dev              # GoogleTest: the suites
  clang libclang-rt-14-dev  # libFuzzer, for the event-protocol fuzz test
  iproute2                  # ip netns: the two-machine test
  openmpi-bin               # mpirun, and
  slurmd slurmctld slurm-client munge   # a one-machine Slurm: the cluster-launcher tests run the real programs
  appstream desktop-file-utils lintian  # the package's metadata and the .deb checked as Debian checks them
  debootstrap patchelf pigz # the install test's clean Debian root; the self-contained worker archive
  ffmpeg                    # the install test reads the frames of the clips it made
)
gui=(qt6-base-dev qt6-base-dev-tools libqt6sql6-sqlite libqcustomplot-dev libqcustomplot2.1-qt6 libgl-dev xvfb
  qtkeychain-qt6-dev        # the Models tab keeps the Hugging Face token in the desktop's secret store
)

want=("${build[@]}" "${engine[@]}" "${tests[@]}")
((gui_wanted)) && want+=("${gui[@]}")
# pip fetches the torch wheel (a download only: nothing is installed into any Python).
((wheel_wanted)) && ! python3 -m pip --version >/dev/null 2>&1 && want+=(python3-pip)

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
((wheel_wanted)) && "$root/packaging/fetch-libtorch.sh"
echo "install-deps: all dependencies present"

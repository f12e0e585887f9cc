#!/usr/bin/env bash
# A short GPU lease, in two halves, for a GPU machine with no network whose image has its own torch (a venv
# python3 with torch; the project's Python packages carried as wheels):
#   bench/gpu-lease.sh pack [BUILD_DIR]   here: BUILD_DIR (default build-gpu, configured with
#     -DSTUDIO_TORCH_PREFIX=<that machine's torch wheel, unpacked> -DSTUDIO_WITH_FFMPEG=OFF -DSTUDIO_BUILD_GUI=OFF)
#     gets its programs built, then .gpu/ holds them, the private libraries with Debian's libsentencepiece, and
#     the reference cases the check replays; .whl/ holds diffusers and what it needs beyond that image.
#   bench/gpu-lease.sh run                there, from the repository root: installs the wheels beside the
#     image's torch, puts that torch's libraries on the library path, and runs our CUDA kernels against their
#     references (bench-gpu-kernels), where our transformer call spends the GPU's time at the real CogVideoX-2B
#     and -5B sizes (bench-gpu-step-profile; LEASE_STEP_PROFILE: the bench-make-model families, "" none),
#     LibTorch's kernels alone (bench/gpu_kernels.py; LEASE_KERNELS_ALONE=0
#     leaves them out), where diffusers' step spends its GPU time (bench/gpu_profile_peer.py; LEASE_PROFILE=0
#     leaves it out), the reference cases (bench/gpu-check.sh with GPU_CHECK_PREBUILT; GPU_CHECK_QUICK) and the
#     step against diffusers eager and compiled (bench/peer_step.sh --gpu; PEER_COMPILE, here by default
#     torch.compile()'s own mode, and PEER_GPU_VARIANTS), then the step again for each of LEASE_PEER_FAMILIES
#     (PEER_GPU_FAMILY, e.g. cogvideox-5b; none by default).
#     Everything it prints is also in $OUT/lease.md when OUT is set.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
case ${1:-} in
  pack)
    build=${2:-build-gpu}
    programs=(dit-worker dit-launch bench-make-model bench-compare-runs bench-gpu-kernels bench-gpu-step-profile)
    cmake --build "$build" --target "${programs[@]}"
    rm -rf .gpu && mkdir -p .gpu/build/bin .gpu/build/lib/dit-studio .gpu/goldens .whl
    for p in "${programs[@]}"; do cp "$build/bin/$p" .gpu/build/bin/; done
    cp "$build"/lib/dit-studio/*.so .gpu/build/lib/dit-studio/
    cp -L /lib/x86_64-linux-gnu/libsentencepiece.so.0 .gpu/build/lib/dit-studio/
    for c in cogvx2b_tiny cogvx5b_tiny cogvx15_tiny flux_tiny flux_words_tiny wan21_tiny wan22_tiny; do
      cp -r "${STUDIO_GOLDENS_DIR:-$root/../shared/goldens}/$c" .gpu/goldens/
    done
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 -d .whl diffusers==0.42.1 importlib_metadata
    du -sh .gpu .whl
    ;;
  run)
    out=${OUT:-/tmp}
    python3 -m pip install -q --upgrade --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
    # That torch's libraries and its CUDA wheels' (the programs name some of those directly).
    libs=$(python3 -c 'import glob, os, torch; t = os.path.dirname(torch.__file__)
print(":".join([t + "/lib"] + sorted(glob.glob(os.path.dirname(t) + "/nvidia/*/lib")) + sorted(glob.glob(os.path.dirname(t) + "/nvidia/*/*/lib"))))')
    export LD_LIBRARY_PATH=$libs:$root/.gpu/build/lib/dit-studio${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    ldd .gpu/build/bin/dit-worker | grep "not found" || true
    {
      nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
      # Each part reports its own failure; the next still runs.
      .gpu/build/bin/bench-gpu-kernels || echo "bench-gpu-kernels failed (exit $?)"
      for f in ${LEASE_STEP_PROFILE-cogvideox cogvideox-5b}; do
        .gpu/build/bin/bench-make-model /tmp/profile-model --family "$f" --layers 10 --bfloat16 >/dev/null &&
          .gpu/build/bin/bench-gpu-step-profile /tmp/profile-model --height 480 --width 720 --num_frames 49 ||
          echo "bench-gpu-step-profile of $f failed (exit $?)"
        rm -rf /tmp/profile-model
      done
      [[ ${LEASE_KERNELS_ALONE:-1} == 0 ]] || python3 bench/gpu_kernels.py || echo "bench/gpu_kernels.py failed"
      [[ ${LEASE_PROFILE:-1} == 0 ]] || python3 bench/gpu_profile_peer.py || echo "bench/gpu_profile_peer.py failed"
      STUDIO_GOLDENS_DIR=$root/.gpu/goldens GPU_CHECK_PREBUILT=1 GPU_CHECK_COST_MODEL=0 PEER_PYTHON=python3 \
        PEER_COMPILE=${PEER_COMPILE-default} \
        bench/gpu-check.sh "$root/.gpu/build" || echo "bench/gpu-check.sh failed (exit $?)"
      for f in ${LEASE_PEER_FAMILIES-}; do
        PEER_GPU_FAMILY=$f PEER_PYTHON=python3 PEER_COMPILE=${PEER_COMPILE-default} bench/peer_step.sh .gpu/build --gpu ||
          echo "bench/peer_step.sh --gpu with PEER_GPU_FAMILY=$f failed (exit $?)"
      done
    } 2>&1 | tee "$out/lease.md"
    ;;
  *)
    echo "usage: bench/gpu-lease.sh pack [BUILD_DIR] | run" >&2
    exit 2
    ;;
esac

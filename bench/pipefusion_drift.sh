#!/usr/bin/env bash
# How far PipeFusion's stale-activation steps take a run from one process: max error of the final latents
# and PSNR of the decoded frames, for warm-up covering all, half, or one of the steps.
# Usage: bench/pipefusion_drift.sh [BUILD_DIR] [STEPS]   (the built-in demo model, 192 x 288, 25 frames)
set -euo pipefail
build=${1:-build}
steps=${2:-20}
out=$(mktemp -d /tmp/dit-drift-XXXXXX)
trap 'rm -rf "$out"' EXIT
run() { "$build/bin/dit-launch" --prompt "A paper boat drifts on a pond" --num_inference_steps "$steps" \
          --save_tensors "$out/$1.safetensors" "${@:2}" >/dev/null 2>&1; }
run one
echo "Demo model (192 x 288, 25 frames, 2 layers), $steps DDIM steps, guidance 6, CPU"
echo
echo "| PipeFusion | patches | warm-up steps | final latents max error | decoded frames PSNR (dB) |"
echo "|---|---|---|---|---|"
for patches in 2 4; do
  for warm in "$steps" $((steps / 2)) 1; do
    run "pf_${patches}_${warm}" --pipefusion_parallel_degree 2 --num_pipeline_patch "$patches" --warmup_steps "$warm"
    read -r err psnr _ < <("$build/bin/bench-compare-runs" "$out/one.safetensors" "$out/pf_${patches}_${warm}.safetensors")
    echo "| 2 stages | $patches | $warm of $steps | $err | $psnr |"
  done
done

#!/usr/bin/env bash
# What keeping the ranks between runs saves (docs/workers.md, "Ranks that stay between runs"): a Wan2.1-T2V-14B-
# shaped transformer of LAYERS blocks (default 2; random weights, bfloat16 on disk) with a rank-64 LoRA on every
# linear layer of its blocks (bench-make-model --lora 64), a 160 x 288 x 5 job of STEPS steps (default 3) in
# float32 on the CPU; run once on fresh ranks, then three times on ranks that serve, the LoRA's strength halved
# each time (bench-served-runs). Prints a markdown table. Usage: bench/served_runs.sh [BUILD_DIR] [LAYERS] [STEPS]
set -euo pipefail
build=${1:-build}
layers=${2:-2}
steps=${3:-3}
dir=$(mktemp -d /tmp/dit-served-bench-XXXXXX)
trap 'rm -rf "$dir"' EXIT
m=$dir/wan
"$build/bin/bench-make-model" "$m" --family wan21-14b --layers "$layers" --bfloat16 --lora 64 >/dev/null
"$build/bin/dit-launch" --model "$m" --prompt_embeds "$m/embeds.safetensors" --height 160 --width 288 --num_frames 5 \
  --guidance_scale 5 --num_inference_steps "$steps" --dtype float32 --device cpu --lora "$m/lora-r64.safetensors:0.8" \
  --save_tensors "$dir/out.safetensors" --write_job "$dir/job.json" 2>/dev/null
echo "Wan2.1-T2V-14B shape, $layers blocks, rank-64 LoRA, 160 x 288 x 5, $steps steps, float32, CPU ($(nproc) cores)"
echo
"$build/bin/bench-served-runs" "$dir/job.json" "$build/bin/dit-worker" 3

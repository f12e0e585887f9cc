#!/usr/bin/env bash
# Step caching (First-Block Cache, TeaCache, MagCache) on the built-in demo models (CogVideoX-shaped clip,
# FLUX.1-shaped image) and on the mid-size CogVideoX-2B shape (real widths: 30 heads x 64, 4 blocks,
# 352 x 240 x 13 frames, its real VAE; random weights, made by bench-make-model), in one process: for each
# threshold, the denoising time, the transformer calls that reused the blocks, and how far the result moved
# from the uncached run of the same seed (final latents' max error, PSNR of the decoded frames as 8-bit
# pixels would show them). MagCache's ratios are measured by the uncached run itself (--magcache_calibrate).
# The weights are random, so the PSNR says only how far the output moved, not whether a real model's
# picture got worse.
# Usage: bench/step_cache.sh [BUILD_DIR] [THRESHOLDS...]   (default build; 0.05 0.7 1 2)
# MID_STEPS (default 10) sets the mid-size model's steps; MAG_THRESHOLDS (default "0.12 0.5 2") MagCache's.
set -euo pipefail
build=${1:-build}
shift || true
thresholds=${*:-0.05 0.7 1 2}
mag_thresholds=${MAG_THRESHOLDS:-0.12 0.5 2}
mid_steps=${MID_STEPS:-10}
launch="$build/bin/dit-launch"
compare="$build/bin/bench-compare-runs"
share="$build/share/dit-studio"
out=$(mktemp -d /tmp/step-cache-XXXXXX)
trap 'rm -rf "$out"' EXIT

"$build/bin/bench-make-model" "$out/mid-2b" --layers 4 --height 240 --width 352 --num_frames 13 --vae >/dev/null
# The flags that choose a model and its text.
model_flags() {
  case $1 in
    mid-2b) flags=(--model "$out/mid-2b" --prompt_embeds "$out/mid-2b/embeds.safetensors"
                   --num_inference_steps "$mid_steps") ;;
    *) flags=(--model "$share/$1" --prompt "A paper boat drifts on a pond") ;;
  esac
}

# Runs dit-launch and prints "denoising_seconds summary" (summary: "-" without a cache).
run() {
  local model=$1 file=$2 log flags
  shift 2
  model_flags "$model"
  log=$("$launch" "${flags[@]}" --seed 7 --save_tensors "$file" "$@" 2>&1) || { echo "$log" >&2; exit 1; }
  local seconds skipped
  seconds=$(sed -n 's/.*denoising \([0-9.]*\) s.*/\1/p' <<<"$log" | tail -1)
  skipped=$(sed -n 's/.*: \([0-9]* of [0-9]*\) calls reused.*/\1/p' <<<"$log" | head -1)
  echo "$seconds ${skipped:--}"
}

row() {  # model, method name, threshold, flags...
  local model=$1 name=$2 t=$3
  shift 3
  local file="$out/$model-$name-$t.safetensors" seconds skipped err psnr
  file=${file// /_}
  read -r seconds skipped < <(run "$model" "$file" "$@" --cache_threshold "$t")
  read -r err psnr _ < <("$compare" "$file" "$out/$model-none.safetensors")
  echo "| $model | $name | $t | $seconds | $skipped | $err | $psnr |"
}

echo "step caching, one process, $(nproc) cores, $(date -u +%F); mid-2b: $mid_steps steps"
echo
echo "| model | cache | threshold | denoising (s) | calls reused | final latents max error | PSNR vs uncached (dB) |"
echo "|---|---|---|---|---|---|---|"
for model in demo-model demo-flux mid-2b; do
  ratios="$out/$model-ratios.json"
  read -r seconds _ < <(run "$model" "$out/$model-none.safetensors" --magcache_calibrate "$ratios")
  echo "| $model | none | - | $seconds | 0 | 0 | inf |"
  for t in $thresholds; do row "$model" "First-Block Cache" "$t" --use_fbcache; done
  for t in $thresholds; do row "$model" "TeaCache" "$t" --use_teacache; done
  for t in $mag_thresholds; do row "$model" "MagCache" "$t" --use_magcache --magcache_ratios "$ratios"; done
done

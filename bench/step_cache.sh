#!/usr/bin/env bash
# Step caching (First-Block Cache, TeaCache) on the built-in demo models (CogVideoX-shaped clip, FLUX.1-shaped image; random weights):
# for each threshold, the denoising time, the transformer calls that reused the blocks after the first,
# and how far the result moved from the uncached run of the same seed (final latents' max error, PSNR of
# the decoded frames as 8-bit pixels would show them). The weights are random, so the PSNR says only how
# far the output moved, not whether a real model's picture got worse.
# Usage: bench/step_cache.sh [BUILD_DIR] [THRESHOLDS...]   (default build; 0.05 0.7 1 2)
set -euo pipefail
build=${1:-build}
shift || true
thresholds=${*:-0.05 0.7 1 2}
launch="$build/bin/dit-launch"
compare="$build/bin/bench-compare-runs"
share="$build/share/dit-studio"
out=$(mktemp -d /tmp/step-cache-XXXXXX)
trap 'rm -rf "$out"' EXIT

# Runs dit-launch and prints "denoising_seconds summary" (summary: "-" without a cache).
run() {
  local file=$1
  shift
  local log
  log=$("$launch" --prompt "A paper boat drifts on a pond" --seed 7 --save_tensors "$file" "$@" 2>&1) ||
    { echo "$log" >&2; exit 1; }
  local seconds skipped
  seconds=$(sed -n 's/.*denoising \([0-9.]*\) s.*/\1/p' <<<"$log" | tail -1)
  skipped=$(sed -n 's/.*: \([0-9]* of [0-9]*\) calls reused.*/\1/p' <<<"$log" | head -1)
  echo "$seconds ${skipped:--}"
}

echo "step caching on the demo models, $(nproc) cores, $(date -u +%F)"
echo
echo "| model | cache | threshold | denoising (s) | calls reused | final latents max error | PSNR vs uncached (dB) |"
echo "|---|---|---|---|---|---|---|"
for model in demo-model demo-flux; do
  base="$out/$model-none.safetensors"
  read -r seconds _ < <(run "$base" --model "$share/$model")
  echo "| $model | none | - | $seconds | 0 | 0 | inf |"
  for method in "First-Block Cache:--use_fbcache" "TeaCache:--use_teacache"; do
    for t in $thresholds; do
      file="$out/$model-$t.safetensors"
      read -r seconds skipped < <(run "$file" --model "$share/$model" "${method#*:}" --cache_threshold "$t")
      read -r err psnr _ < <("$compare" "$file" "$base")
      echo "| $model | ${method%%:*} | $t | $seconds | $skipped | $err | $psnr |"
    done
  done
done

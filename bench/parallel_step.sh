#!/usr/bin/env bash
# Time per step and bytes moved per step of each parallel configuration, on CPU processes, for the
# real-size CogVideoX-2B shape (480 x 720, 49 frames: 17,550 video + 226 text tokens, 30 heads x 64)
# with LAYERS transformer blocks (default 1; the real model has 30, and bytes per step scale with it).
# Prints a markdown table. Usage: bench/parallel_step.sh [BUILD_DIR] [LAYERS] [STEPS]
set -euo pipefail
build=${1:-build}
layers=${2:-1}
steps=${3:-2}
model=$(mktemp -d /tmp/dit-bench-model-XXXXXX)
trap 'rm -rf "$model"' EXIT
"$build/bin/bench-make-model" "$model" --layers "$layers" >/dev/null

configs=("" "--ulysses_degree 2" "--ring_degree 2" "--use_cfg_parallel"
         "--ulysses_degree 2 --ring_degree 2" "--use_cfg_parallel --ulysses_degree 2")
echo "CogVideoX-2B shape, 480x720x49, $layers layer(s), $steps steps, guidance 6 (CFG batch of 2), float32, CPU ($(nproc) cores)"
echo
echo "| configuration | processes | seconds per step (last step, slowest rank) | MB sent per step per rank | MB received per step per rank |"
echo "|---|---|---|---|---|"
for c in "${configs[@]}"; do
  log=$("$build/bin/dit-launch" --model "$model" --prompt_embeds "$model/embeds.safetensors" \
        --num_inference_steps "$steps" $c 2>&1) || { echo "| ${c:-one process} | failed | | | |"; continue; }
  procs=$(echo "$log" | grep -oP 'starting \K[0-9]+' || echo 1)
  # The last step's line of every rank: time, cumulative MB sent and received.
  last=$(echo "$log" | grep -P "step $steps/$steps" || true)
  secs=$(echo "$last" | grep -oP "step $steps/$steps\s+\K[0-9.]+" | sort -g | tail -1 || true)
  # One process moves nothing: its step line has no traffic figures.
  sent=$(echo "$last" | grep -oP 'sent \K[0-9.]+' | sort -g | tail -1 || true)
  recv=$(echo "$last" | grep -oP 'received \K[0-9.]+' | sort -g | tail -1 || true)
  per_step() { awk -v t="${1:-0}" -v s="$steps" 'BEGIN { printf "%.1f", t / s }'; }
  echo "| ${c:-one process} | $procs | $secs | $(per_step "$sent") | $(per_step "$recv") |"
done

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
"$build/bin/bench-make-model" "$model" --layers "$layers" >/dev/null

configs=("" "--ulysses_degree 2" "--ring_degree 2" "--use_cfg_parallel"
         "--ulysses_degree 2 --ring_degree 2" "--use_cfg_parallel --ulysses_degree 2")
echo "CogVideoX-2B shape, 480x720x49, $layers layer(s), $steps steps, guidance 6 (CFG batch of 2), float32, CPU ($(nproc) cores)"
echo
echo "| configuration | processes | seconds per step (last step, slowest rank) | MB sent per step per rank | MB received per step per rank |"
echo "|---|---|---|---|---|"
events=$(mktemp /tmp/dit-bench-events-XXXXXX)
trap 'rm -rf "$model" "$events"' EXIT
for c in "${configs[@]}"; do
  log=$("$build/bin/dit-launch" --model "$model" --prompt_embeds "$model/embeds.safetensors" \
        --num_inference_steps "$steps" --events_log "$events" $c 2>&1) || { echo "| ${c:-one process} | failed | | | |"; continue; }
  procs=$(grep -c '"kind":"hello"' "$events")
  # Every rank's progress event for the last step: its time, and the bytes it has moved so far.
  last=$(grep '"kind":"progress"' "$events" | grep "\"step\":$steps,")
  secs=$(echo "$last" | grep -oP '"seconds":\K[0-9.e+-]+' | sort -g | tail -1)
  sent=$(echo "$last" | grep -oP '"bytes_sent":\K[0-9]+' | sort -g | tail -1)
  recv=$(echo "$last" | grep -oP '"bytes_received":\K[0-9]+' | sort -g | tail -1)
  per_step() { awk -v t="${1:-0}" -v s="$steps" 'BEGIN { printf "%.1f", t / s / 1e6 }'; }
  printf "| %s | %s | %.3f | %s | %s |\n" "${c:-one process}" "$procs" "$secs" "$(per_step "$sent")" "$(per_step "$recv")"
done

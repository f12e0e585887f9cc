#!/usr/bin/env bash
# Host memory per rank of Wan2.1-T2V-1.3B's real shape (random weights, stored and run in bfloat16) on CPU
# processes, in one process and in 2- and 4-rank mixes; then Wan2.2's expert switch with two experts of that
# shape, in bfloat16 (the stored weights mapped) and in float32 (copied as they load, so its peaks include
# the load). Each rank's peak RSS (VmHWM) comes from dit-launch's --events_log: the progress event of the
# last step (the denoising peak) and the done event (the whole run, the VAE decode included). A small job:
# 160 x 288, 9 frames (540 video + 512 text tokens), STEPS steps (default 2), guidance 5 (two transformer
# calls a step). LAYERS (default 30, the real model's) is for a quick check of the script itself.
# PipeFusion with Ulysses runs every step synchronously in this version (--warmup_steps = STEPS).
# Prints markdown tables. Usage: bench/wan_memory.sh [BUILD_DIR] [STEPS] [LAYERS]
set -euo pipefail
build=${1:-build}
steps=${2:-2}
layers=${3:-30}
dir=$(mktemp -d /tmp/dit-wan-memory-XXXXXX)
trap 'rm -rf "$dir"' EXIT
made=$("$build/bin/bench-make-model" "$dir/wan21" --family wan21 --layers "$layers" --vae --bfloat16)
"$build/bin/bench-make-model" "$dir/wan22" --family wan22 --layers "$layers" --vae --bfloat16 >/dev/null
events="$dir/events.jsonl"
dtype=bfloat16

# The plan's estimate of one rank's transformer weights with $1 PipeFusion stages.
planned() { grep -oP "with $1 PipeFusion stage\(s\): \K[0-9.]+" <<<"$made"; }
# Runs dit-launch on folder $1 with the flags that follow; its events go to $events.
launch() {
  local model=$1
  shift
  "$build/bin/dit-launch" --model "$model" --prompt_embeds "$model/embeds.safetensors" --height 160 --width 288 \
    --num_frames 9 --num_inference_steps "$steps" --dtype "$dtype" --device cpu \
    --save_tensors "$dir/out.safetensors" --events_log "$events" "$@" >"$dir/log" 2>&1 ||
    { cat "$dir/log" >&2; return 1; }
}
# The largest value of field $2 over the events of kind $1 (a further grep pattern $3 picks lines), in GiB
# for byte counts.
largest() { grep "\"kind\":\"$1\"" "$events" | grep -e "${3:-.}" | grep -oP "\"$2\":\K[0-9.e+-]+" | sort -g | tail -1; }
gib() { awk -v b="$1" 'BEGIN { printf "%.2f", b / 1073741824 }'; }

echo "Wan2.1-T2V-1.3B shape ($layers blocks), 160x288x9, $steps steps, guidance 5, bfloat16, CPU ($(nproc) cores)"
echo
echo "| configuration | ranks | peak RSS per rank, denoising (GiB) | peak RSS per rank, whole run (GiB) |" \
     "transformer weights per rank, plan (GiB) | seconds per step (last step, slowest rank) |"
echo "|---|---|---|---|---|---|"
configs=("" "--ulysses_degree 2" "--pipefusion_parallel_degree 2" "--ulysses_degree 2 --ring_degree 2"
         "--pipefusion_parallel_degree 4" "--pipefusion_parallel_degree 2 --ulysses_degree 2 --warmup_steps $steps")
for c in "${configs[@]}"; do
  # shellcheck disable=SC2086
  launch "$dir/wan21" $c || { echo "| ${c:-one process} | failed | | | | |"; continue; }
  [ -n "$c" ] || one_expert=$(largest progress host_peak "\"step\":$steps,")
  stages=$(grep -oP 'pipefusion_parallel_degree \K[0-9]+' <<<"$c" || echo 1)
  printf "| %s | %s | %s | %s | %s | %.1f |\n" "${c:-one process}" "$(grep -c '"kind":"hello"' "$events")" \
    "$(gib "$(largest progress host_peak "\"step\":$steps,")")" "$(gib "$(largest done host_peak)")" \
    "$(planned "$stages")" "$(largest progress seconds "\"step\":$steps,")"
done

# Wan2.2 in one process: the last progress event before the log says it switches, and the last after it,
# against the one-expert folder's denoising peak in the same dtype.
echo
echo "Wan2.2-shaped folder (two experts of the shape above, boundary_ratio 0.875), one process, against the"
echo "one-expert folder; one expert's weights are $(planned 1) GiB in bfloat16, twice that in float32."
echo
echo "| dtype | one expert: peak RSS (GiB) | Wan2.2: RSS before the switch (GiB) | RSS after (GiB) |" \
     "peak RSS before (GiB) | peak RSS after (GiB) |"
echo "|---|---|---|---|---|---|"
field() { grep '"kind":"progress"' "$1" | tail -1 | grep -oP "\"$2\":\K[0-9]+"; }
for dtype in bfloat16 float32; do
  if [ "$dtype" = float32 ]; then
    launch "$dir/wan21"
    one_expert=$(largest progress host_peak "\"step\":$steps,")
  fi
  launch "$dir/wan22"
  switch=$(grep -n 'switching to the low-noise expert' "$events" | cut -d: -f1)
  [ -n "$switch" ] || { echo "no expert switch in the log" >&2; exit 1; }
  head -n "$switch" "$events" >"$dir/before"
  tail -n +"$switch" "$events" >"$dir/after"
  printf "| %s | %s | %s | %s | %s | %s |\n" "$dtype" "$(gib "$one_expert")" \
    "$(gib "$(field "$dir/before" host_rss)")" "$(gib "$(field "$dir/after" host_rss)")" \
    "$(gib "$(field "$dir/before" host_peak)")" "$(gib "$(field "$dir/after" host_peak)")"
done

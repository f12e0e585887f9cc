#!/usr/bin/env bash
# Memory and time per rank for the ways a transformer's weights can be kept (docs/memory.md), on a
# Wan2.1-T2V-14B-shaped folder (width 5120, ffn 13824; LAYERS blocks, default 2, random weights, bfloat16 on
# disk) and a FLUX.1-dev-shaped one (LAYERS double and LAYERS single blocks), run on CPU processes in float32
# (a CPU without bfloat16 units computes it slowly; the weights' formats are what is compared):
# the folder as it is; --shard_weights over 2 and 4 ranks (Ulysses); --quantize fp8; the transformer as a
# GGUF Q8_0 and Q4_K file (bench-make-model --gguf); --offload blocks. Per rank, from dit-launch's
# --events_log: the RSS after the last step (what the rank holds while denoising: the progress event's VmRSS)
# and the peak over the run (VmHWM of the done event, the load included), beside the plan's peak per rank
# for the same job and flags (dit-launch --plan --json), and the seconds of the last step. Small jobs, as a CPU allows: Wan 160 x 288 x
# 5 frames (360 video + 512 text tokens), FLUX 256 x 256 (256 + 512); STEPS steps (default 1).
# Prints markdown tables. Usage: bench/weight_storage.sh [BUILD_DIR] [LAYERS] [STEPS]
set -euo pipefail
build=${1:-build}
layers=${2:-2}
steps=${3:-1}
dir=$(mktemp -d /tmp/dit-weight-storage-XXXXXX)
trap 'rm -rf "$dir"' EXIT
export XDG_CACHE_HOME="$dir/cache"  # the plan's device figures, measured once for this run
events="$dir/events.jsonl"

largest() { grep "\"kind\":\"$1\"" "$events" | grep -e "${3:-.}" | grep -oP "\"$2\":\K[0-9.e+-]+" | sort -g | tail -1; }
gib() { awk -v b="$1" 'BEGIN { printf "%.2f", b / 1073741824 }'; }

table() {  # $1 family name, $2 folder, $3 job flags; configurations from the lines of $configs
  local name=$1 model=$2 job=$3
  echo "$name, $layers blocks, $steps step(s), float32, CPU ($(nproc) cores)"
  echo
  echo "| weights | flags | ranks | RSS after the last step (GiB) | peak RSS, load included (GiB) |" \
       "plan: peak per rank (GiB) | seconds per step |"
  echo "|---|---|---|---|---|---|---|"
  while IFS='|' read -r label flags; do
    local ranks=1 d
    for d in $(grep -oP '(ulysses_degree|ring_degree) \K[0-9]+' <<<"$flags" || true); do ranks=$((ranks * d)); done
    # shellcheck disable=SC2086
    if ! "$build/bin/dit-launch" --model "$model" --prompt_embeds "$model/embeds.safetensors" $job \
        --num_inference_steps "$steps" --dtype float32 --device cpu --save_tensors "$dir/out.safetensors" \
        --events_log "$events" $flags >"$dir/log" 2>&1; then
      echo "| $label | $flags | $ranks | failed: $(tail -1 "$dir/log" | cut -c1-120) | | | |"
      continue
    fi
    local parallel plan
    parallel=$(grep -oP -- '--(ulysses|ring)_degree [0-9]+|--shard_weights' <<<"$flags" | paste -sd' ' || true)
    # shellcheck disable=SC2086
    plan=$("$build/bin/dit-launch" --model "$model" --prompt_embeds "$model/embeds.safetensors" $job \
      --num_inference_steps "$steps" --dtype float32 --device cpu --nproc_per_node "$ranks" --plan --json \
      $(sed -E 's/--(ulysses|ring)_degree [0-9]+//g; s/--shard_weights//' <<<"$flags") 2>/dev/null |
      python3 -c "import json,sys; a=json.load(sys.stdin); m=[o for o in a if o['args']=='$parallel']; \
print('%.2f' % (m[0]['peak_bytes_per_rank']/2**30) if m else 'n/a')" || echo n/a)
    printf "| %s | %s | %s | %s | %s | %s | %.1f |\n" "$label" "${flags:-}" "$ranks" \
      "$(gib "$(largest progress host_rss "\"step\":$steps,")")" "$(gib "$(largest done host_peak)")" "$plan" \
      "$(largest progress seconds "\"step\":$steps,")"
  done <<<"$configs"
  echo
}

for family in wan21-14b flux; do
  "$build/bin/bench-make-model" "$dir/$family" --family "$family" --layers "$layers" --bfloat16 --gguf Q8_0 >/dev/null
  "$build/bin/bench-make-model" "$dir/$family-k" --family "$family" --layers "$layers" --bfloat16 --gguf Q4_K >/dev/null
  m=$dir/$family
  configs="folder|
folder, sharded over 2|--ulysses_degree 2 --shard_weights
folder, sharded over 3|--ulysses_degree 3 --shard_weights
fp8 (--quantize)|--quantize fp8
GGUF Q8_0|--transformer $m/transformer-Q8_0.gguf
GGUF Q4_K|--transformer $dir/$family-k/transformer-Q4_K.gguf
offloaded blocks|--offload blocks"
  if [ "$family" = flux ]; then
    table "FLUX.1-dev shape, 256 x 256" "$m" "--height 256 --width 256"
  else
    table "Wan2.1-T2V-14B shape, 160 x 288 x 5" "$m" "--height 160 --width 288 --num_frames 5 --guidance_scale 5"
  fi
  rm -rf "$dir/$family" "$dir/$family-k"
done

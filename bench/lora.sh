#!/usr/bin/env bash
# What a LoRA costs (docs/lora.md): a rank-RANK LoRA (default 64) on every linear layer of the blocks of a
# Wan2.1-T2V-14B-shaped transformer (width 5120) and a FLUX.1-dev-shaped one (width 3072), LAYERS blocks of each
# kind (default 2; random weights, bfloat16 on disk; bench-make-model --lora), run on the CPU in float32:
# - the transformer's load, without the LoRA and with it merged into the weights (the folder), and without and
#   with it beside the layers (the transformer as a GGUF Q8_0 file, which stays quantized);
# - the seconds of a step in each: the fastest of steps 2 to STEPS (the machine's noise is a tenth of a step;
#   the fastest is the least disturbed), from dit-launch's --events_log.
# The real models have 40 (Wan) and 19 + 38 (FLUX) blocks: the table also gives the load's extra seconds per block.
# Small jobs by default, as a CPU allows: Wan 160 x 288 x 5 frames, FLUX 256 x 256; STEPS steps (default 4).
# LORA_BENCH_REAL=1: the real sizes' tokens instead (FLUX 1024 x 1024, Wan 480 x 832 with 5 frames: 480p's
# positions per frame; its 81 frames are beyond a CPU bench's reach).
# Prints markdown tables. Usage: [LORA_BENCH_REAL=1] bench/lora.sh [BUILD_DIR] [LAYERS] [RANK] [STEPS]
set -euo pipefail
build=${1:-build}
layers=${2:-2}
rank=${3:-64}
steps=${4:-4}
dir=$(mktemp -d /tmp/dit-lora-bench-XXXXXX)
trap 'rm -rf "$dir"' EXIT
events="$dir/events.jsonl"

field() { grep "\"kind\":\"$1\"" "$events" | grep -oP "\"$2\":\K[0-9.e+-]+" | tail -1; }
fastest_step() {  # the fastest step after the first
  grep '"kind":"progress"' "$events" | grep -v '"step":1,' | grep -oP '"seconds":\K[0-9.e+-]+' | sort -g | head -1
}

run() {  # $1 folder, $2 job flags, $3 weights flags; prints "load step"
  rm -f "$events"
  # shellcheck disable=SC2086
  "$build/bin/dit-launch" --model "$1" --prompt_embeds "$1/embeds.safetensors" $2 $3 --num_inference_steps "$steps" \
    --dtype float32 --device cpu --save_tensors "$dir/out.safetensors" --events_log "$events" >"$dir/log" 2>&1 ||
    { echo "failed: $(tail -1 "$dir/log" | cut -c1-160)" >&2; exit 1; }
  echo "$(field done seconds_loading) $(fastest_step)"
}

for family in wan21-14b flux; do
  m=$dir/$family
  "$build/bin/bench-make-model" "$m" --family "$family" --layers "$layers" --bfloat16 --gguf Q8_0 --lora "$rank" >/dev/null
  if [ "$family" = flux ]; then
    size=$( ((${LORA_BENCH_REAL:-0})) && echo "1024 1024" || echo "256 256")
    name="FLUX.1-dev shape, ${size/ / x }"; job="--height ${size% *} --width ${size#* }"; blocks=$((2 * layers))
  else
    size=$( ((${LORA_BENCH_REAL:-0})) && echo "480 832" || echo "160 288")
    name="Wan2.1-T2V-14B shape, ${size/ / x } x 5"
    job="--height ${size% *} --width ${size#* } --num_frames 5 --guidance_scale 5"
    blocks=$layers
  fi
  lora="--lora $m/lora-r$rank.safetensors"
  gguf="--transformer $m/transformer-Q8_0.gguf"
  read -r load0 step0 <<<"$(run "$m" "$job" "")"
  read -r load1 step1 <<<"$(run "$m" "$job" "$lora")"
  read -r load2 step2 <<<"$(run "$m" "$job" "$gguf")"
  read -r load3 step3 <<<"$(run "$m" "$job" "$gguf $lora")"
  echo "$name, $blocks blocks, rank $rank ($(du -h "$m/lora-r$rank.safetensors" | cut -f1)), float32, CPU ($(nproc) cores)"
  echo
  echo "| transformer | LoRA | load (s) | load's extra per block (s) | s/step | the LoRA's share of a step |"
  echo "|---|---|---|---|---|---|"
  awk -v l0="$load0" -v s0="$step0" -v l1="$load1" -v s1="$step1" -v l2="$load2" -v s2="$step2" -v l3="$load3" \
      -v s3="$step3" -v b="$blocks" 'BEGIN {
    printf "| folder | none | %.2f | | %.2f | |\n", l0, s0
    printf "| folder | merged | %.2f | %.3f | %.2f | %+.1f%% |\n", l1, (l1 - l0) / b, s1, 100 * (s1 - s0) / s0
    printf "| GGUF Q8_0 | none | %.2f | | %.2f | |\n", l2, s2
    printf "| GGUF Q8_0 | beside | %.2f | %.3f | %.2f | %+.1f%% |\n", l3, (l3 - l2) / b, s3, 100 * (s3 - s2) / s2 }'
  echo
  rm -rf "$m"
done

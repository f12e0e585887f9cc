#!/usr/bin/env bash
# Wan2.1-I2V-14B's step beside Wan2.1-T2V-14B's, ours and the peer's (diffusers 0.42.1 on the same torch) in one
# run, on the same random weights: bench-make-model's wan21-14b and wan21-i2v-14b folders with LAYERS of their 40
# blocks, HEIGHT x WIDTH x FRAMES (default 480 x 832 x 5: 3,120 video tokens), guidance on (two calls a step),
# float32 on the CPU, 2 threads each. I2V differs by 20 more input channels (the picture's mask and latents) and
# an image cross-attention over CLIP's 257 rows in every block. Ours: dit-launch with --prompt_embeds (and
# --image: CLIP and the VAE's encode run before the steps, outside the figure); the peer: its transformer called
# as its pipelines call it (bench/wan_peer_step.py). Seconds per step after the first.
# The peer's Python: PEER_PYTHON, else BUILD_DIR/bench-venv-042 (bench/peer_042.sh).
# Usage: bench/wan_i2v_step.sh [BUILD_DIR] [LAYERS] [STEPS] [HEIGHT WIDTH FRAMES]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
layers=${2:-2}
steps=${3:-3}
((steps >= 2)) || { echo "wan_i2v_step: STEPS $steps: at least 2 (the first step is not timed)" >&2; exit 2; }
height=${4:-480} width=${5:-832} frames=${6:-5}
# shellcheck source=bench/peer_042.sh
source "$root/bench/peer_042.sh"
python=$(peer_python "$build")
work=$(mktemp -d /tmp/dit-wan-i2v-XXXXXX)
trap 'rm -rf "$work"' EXIT
# The picture: any 8-bit RGB file does; the pipeline's resize to the video's size runs before the steps.
"$python" -c "from PIL import Image; Image.effect_mandelbrot(($width, $height), (-2, -1.2, 1, 1.2), 64).convert('RGB').save('$work/picture.png')"
echo "Wan2.1-14B widths, $layers of 40 blocks, $height x $width x $frames frames, $steps steps, float32," \
     "$(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| model | ours (dit-launch), s/step | diffusers 0.42.1, s/step | ours / peer |"
echo "|---|---|---|---|"
for family in wan21-14b wan21-i2v-14b; do
  model=$work/$family
  "$build/bin/bench-make-model" "$model" --family "$family" --layers "$layers" --bfloat16 >/dev/null
  picture=()
  [[ $family == wan21-14b ]] || picture=(--image "$work/picture.png")
  OMP_NUM_THREADS=2 "$build/bin/dit-launch" --model "$model" --prompt_embeds "$model/embeds.safetensors" "${picture[@]}" \
    --height "$height" --width "$width" --num_frames "$frames" --num_inference_steps "$steps" --dtype float32 \
    --events_log "$work/events" >"$work/log" 2>&1 || { cat "$work/log" >&2; exit 1; }
  ours=$(grep '"kind":"progress"' "$work/events" | sed -n 's/.*"seconds":\([0-9.e+-]*\).*/\1/p' | tail -n +2 |
         awk '{ s += $1; n++ } END { printf "%.2f", s / n }')
  "$python" "$root/bench/wan_peer_step.py" "$model" "$steps" "$height" "$width" "$frames" >"$work/peer" 2>&1 ||
    { cat "$work/peer" >&2; exit 1; }
  peer=$(sed -n 's/.*steps after the first \([0-9.]*\) s$/\1/p' "$work/peer")
  echo "| $([[ $family == wan21-14b ]] && echo T2V-14B || echo I2V-14B-480P) | $ours | $peer |" \
       "$(awk -v a="$ours" -v b="$peer" 'BEGIN { printf "%.2f", a / b }') |"
  rm -rf "$model"
done

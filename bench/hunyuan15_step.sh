#!/usr/bin/env bash
# HunyuanVideo-1.5 at its real width against the peer, diffusers 0.42.1, in one run on the same weights: the 480p
# T2V configs with random weights and LAYERS of its 54 blocks (bench-make-model --family hunyuan15), 480 x 848 x 9
# frames (4,770 video tokens; SIZE 720p: the 720p configs at 720 x 1280 x 9, 10,800 tokens), guidance from the
# guider (two calls a step), float32 on the CPU, 2 threads each.
# Ours: dit-launch with embeds of the real rows (100 Qwen + 20 ByT5 for the prompt, 80 for the negative); the
# peer: its transformer called as HunyuanVideo15Pipeline calls it from words (texts padded to 1000 + 256 rows with
# masks, the picture's 729 rows zeroed; bench/hunyuan15_peer_step.py). Seconds per step after the first.
# The peer's Python: PEER_PYTHON, else BUILD_DIR/bench-venv-042 (bench/peer_042.sh).
# Usage: bench/hunyuan15_step.sh [BUILD_DIR] [LAYERS] [STEPS] [480p|720p]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
layers=${2:-2}
steps=${3:-3}
((steps >= 2)) || { echo "hunyuan15_step: STEPS $steps: at least 2 (the first step is not timed)" >&2; exit 2; }
case ${4:-480p} in
  480p) height=480 width=848 ;;
  720p) height=720 width=1280 ;;
  *) echo "hunyuan15_step: SIZE ${4}: 480p or 720p" >&2; exit 2 ;;
esac
# shellcheck source=bench/peer_042.sh
source "$root/bench/peer_042.sh"
python=$(peer_python "$build")
work=$(mktemp -d /tmp/dit-hy15-XXXXXX)
trap 'rm -rf "$work"' EXIT
"$build/bin/bench-make-model" "$work/model" --family hunyuan15 --layers "$layers" --height "$height" >/dev/null
echo "HunyuanVideo-1.5 ${4:-480p} T2V widths, $layers blocks, $height x $width x 9 frames, $steps steps, float32," \
     "$(nproc) cores;" \
     "load average $(cut -d' ' -f1-3 /proc/loadavg)"
OMP_NUM_THREADS=2 "$build/bin/dit-launch" --model "$work/model" --prompt_embeds "$work/model/embeds.safetensors" \
  --height "$height" --width "$width" --num_frames 9 --num_inference_steps "$steps" --events_log "$work/events" >/dev/null 2>&1
ours=$(grep '"kind":"progress"' "$work/events" | sed -n 's/.*"seconds":\([0-9.e+-]*\).*/\1/p' | tail -n +2 |
       awk '{ s += $1; n++ } END { printf "%.2f", s / n }')
peer=$("$python" "$root/bench/hunyuan15_peer_step.py" "$work/model" "$steps" "$height" "$width" 9 2>/dev/null |
       sed -n 's/.*steps after the first \([0-9.]*\) s$/\1/p')
echo
echo "| | s/step (after the first) |"
echo "|---|---|"
echo "| ours (dit-launch) | $ours |"
echo "| diffusers 0.42.1 | $peer |"

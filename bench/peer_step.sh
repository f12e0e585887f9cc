#!/usr/bin/env bash
# Us against the peer, diffusers 0.32.2, in one run: seconds per denoising step, GFLOP/s and fraction of
# the fp32 GEMM peak (same run, same torch), and VAE decode seconds, on the same weights and inputs: a
# CogVideoX-2B-shaped model with random weights (real widths, 4 layers, 240 x 352 x 13 frames: 1320 video
# + 226 text tokens, with the real 2b VAE), guidance 6 (CFG batch of 2), DDIM, float32, 2 threads each.
# The Python side runs in BUILD_DIR/bench-venv (made on first use). Prints a markdown table.
# Usage: bench/peer_step.sh [BUILD_DIR] [STEPS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
steps=${2:-6}
command="bench/peer_step.sh $*"
load=$(cut -d' ' -f1-3 /proc/loadavg)  # anything else running skews every figure

venv="$build/bench-venv"
wheels="$root/.deps/wheels-2.15.0"
if ! "$venv/bin/python" -c 'import torch, diffusers; from diffusers import CogVideoXPipeline
assert torch.__version__.split("+")[0] == "2.15.0" and diffusers.__version__ == "0.32.2"' 2>/dev/null; then
  echo "making $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  # The local wheels first and with no index: given both, pip fetches the same wheels from PyPI again.
  "$venv/bin/pip" install -q --no-index --no-deps "$wheels"/*.whl
  # transformers 5 dropped names diffusers 0.32.2 imports (FLAX_WEIGHTS_NAME).
  "$venv/bin/pip" install -q --find-links "$wheels" torch==2.15.0 diffusers==0.32.2 "transformers<5"
fi

work=$(mktemp -d /tmp/dit-peer-XXXXXX)
trap 'rm -rf "$work"' EXIT
model=$work/model
"$build/bin/bench-make-model" "$model" --layers 4 --height 240 --width 352 --num_frames 13 --vae >&2
"$venv/bin/python" "$root/bench/peer_step.py" latents "$model" "$work/latents.safetensors"
"$build/bin/dit-launch" --model "$model" --prompt_embeds "$model/embeds.safetensors" --latents "$work/latents.safetensors" \
  --height 240 --width 352 --num_frames 13 --num_inference_steps "$steps" --guidance_scale 6 \
  --events_log "$work/events.jsonl" --save_tensors "$work/ours.safetensors" >"$work/launch.log" 2>&1 ||
  { tail -20 "$work/launch.log" >&2; exit 1; }
"$venv/bin/python" "$root/bench/peer_step.py" compare "$model" "$work" "$steps" "$command" "$load"

#!/usr/bin/env bash
# Us against the peer, diffusers 0.32.2, in one run, on the same weights and inputs.
# CPU (the default): seconds per denoising step, GFLOP/s and fraction of the fp32 GEMM peak (same run, same
# torch), and VAE decode seconds: a CogVideoX-2B-shaped model with random weights (real widths, 4 layers,
# 240 x 352 x 13 frames: 1320 video + 226 text tokens, with the real 2b VAE), guidance 6 (CFG batch of 2),
# DDIM, float32, 2 threads each.
# --gpu: the real CogVideoX-2B size (480 x 720 x 49 frames: 17550 video + 226 text tokens) with 10 of its 30
# layers (PEER_GPU_LAYERS; PEER_GPU_FAMILY=cogvideox-5b: CogVideoX-5B's transformer), stored and run in bfloat16
# on cuda:0, diffusers with its SDPA attention: seconds per step, TFLOP/s, MFU (of the bf16 GEMM peak measured
# in the same run) and peak GPU memory; no VAE, no decoding. STEPS >= 2 (the first step is not counted). Needs a CUDA build (bench/gpu-check.sh makes one). Also on the GPU:
#   our variants, one run each on the same inputs, a row each with the final latents' difference from ours
#   (PEER_GPU_VARIANTS: flag sets separated by ';', default every --attention_kernel and --fp8_gemm; "" none);
#   diffusers' transformer under torch.compile (PEER_COMPILE: a mode, default max-autotune-no-cudagraphs as the
#   issue's peer; "default" for torch.compile()'s own; "" none), its compile time apart.
# The Python side runs in BUILD_DIR/bench-venv (made on first use), or PEER_PYTHON. Prints a markdown table.
# Usage: bench/peer_step.sh [BUILD_DIR] [STEPS]         (CPU; STEPS default 6)
#        bench/peer_step.sh BUILD_DIR --gpu [STEPS]     (STEPS default 4)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
command="bench/peer_step.sh $*"
[[ ${1:-} != --gpu ]] || { echo "usage: bench/peer_step.sh BUILD_DIR --gpu [STEPS]" >&2; exit 2; }
gpu=0
if [[ ${2:-} == --gpu ]]; then gpu=1; set -- "$1" "${@:3}"; fi
build=$(cd "${1:-$root/build}" && pwd)
steps=${2:-$((gpu ? 4 : 6))}
load=$(cut -d' ' -f1-3 /proc/loadavg)  # anything else running skews every figure

# The peer's Python: PEER_PYTHON when set (one that already has torch and diffusers, on a machine with no
# network: its versions are printed with the table), else BUILD_DIR/bench-venv with the project's torch
# and diffusers 0.32.2.
if [[ -n ${PEER_PYTHON:-} ]]; then
  python=$PEER_PYTHON
  "$python" -c 'import torch, diffusers' ||
    { echo "peer_step: PEER_PYTHON=$python cannot import torch and diffusers" >&2; exit 2; }
else
  venv="$build/bench-venv"
  python="$venv/bin/python"
  wheels="$root/.deps/wheels-2.15.0"
  if ! "$python" -c 'import torch, diffusers; from diffusers import CogVideoXPipeline
assert torch.__version__.split("+")[0] == "2.15.0" and diffusers.__version__ == "0.32.2"' 2>/dev/null; then
    echo "making $venv" >&2
    rm -rf "$venv"
    python3 -m venv "$venv"
    # The local wheels first and with no index: given both, pip fetches the same wheels from PyPI again.
    "$venv/bin/pip" install -q --no-index --no-deps "$wheels"/*.whl
    # transformers 5 dropped names diffusers 0.32.2 imports (FLAX_WEIGHTS_NAME).
    "$venv/bin/pip" install -q --find-links "$wheels" torch==2.15.0 diffusers==0.32.2 "transformers<5"
  fi
fi

work=$(mktemp -d /tmp/dit-peer-XXXXXX)
trap 'rm -rf "$work"' EXIT
model=$work/model
if ((gpu)); then
  if ! [[ $steps =~ ^[0-9]+$ ]] || ((steps < 2)); then
    echo "peer_step: --gpu needs STEPS >= 2 (the first is not counted), not '$steps'" >&2
    exit 2
  fi
  "$python" -c 'import sys, torch; sys.exit(not torch.cuda.is_available())' ||
    { echo "peer_step: the torch of $python sees no CUDA device" >&2; exit 2; }
  size=(--height 480 --width 720 --num_frames 49)
  # No --vae: neither side decodes. PEER_GPU_FAMILY=cogvideox-5b: CogVideoX-5B's transformer instead.
  make=(--family "${PEER_GPU_FAMILY:-cogvideox}" --layers "${PEER_GPU_LAYERS:-10}" "${size[@]}" --bfloat16)
  ours=(--device cuda:0 --dtype bfloat16)
  mode=compare-gpu
else
  size=(--height 240 --width 352 --num_frames 13)
  make=(--layers 4 "${size[@]}" --vae)
  ours=()
  mode=compare
fi
"$build/bin/bench-make-model" "$model" "${make[@]}" >&2
"$python" "$root/bench/peer_step.py" latents "$model" "$work/latents.safetensors"
"$build/bin/dit-launch" --model "$model" --prompt_embeds "$model/embeds.safetensors" --latents "$work/latents.safetensors" \
  "${size[@]}" --num_inference_steps "$steps" --guidance_scale 6 "${ours[@]}" \
  --events_log "$work/events.jsonl" --save_tensors "$work/ours.safetensors" >"$work/launch.log" 2>&1 ||
  { tail -20 "$work/launch.log" >&2; exit 1; }
if ((gpu)); then
  IFS=';' read -r -a variants <<<"${PEER_GPU_VARIANTS---attention_kernel flash;--attention_kernel cudnn;--attention_kernel efficient;--fp8_gemm}"
  : >"$work/variants.txt"
  for i in "${!variants[@]}"; do
    read -r -a flags <<<"${variants[$i]}"
    ((${#flags[@]})) || continue
    dir=$work/variant-$i
    mkdir -p "$dir"
    if "$build/bin/dit-launch" --model "$model" --prompt_embeds "$model/embeds.safetensors" \
         --latents "$work/latents.safetensors" "${size[@]}" --num_inference_steps "$steps" --guidance_scale 6 \
         "${ours[@]}" "${flags[@]}" --events_log "$dir/events.jsonl" --save_tensors "$dir/ours.safetensors" \
         >"$dir/launch.log" 2>&1; then
      printf '%s\t%s\n' "$dir" "${flags[*]}" >>"$work/variants.txt"
    else
      echo "peer_step: our run with ${flags[*]} failed: $(tail -1 "$dir/launch.log")" >&2
    fi
  done
  grep -h "attention \[" "$work/launch.log" >&2 || true  # what auto chose, as the log says
fi
PEER_COMPILE=${PEER_COMPILE-max-autotune-no-cudagraphs} \
  "$python" "$root/bench/peer_step.py" "$mode" "$model" "$work" "$steps" "$command" "$load"

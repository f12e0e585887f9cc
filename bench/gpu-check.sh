#!/usr/bin/env bash
# GPU acceptance, for any machine with NVIDIA GPUs (about 10 minutes on one H100):
#  1. builds the engine against the project's LibTorch 2.x (its CUDA build) with NCCL;
#  2. runs every CogVideoX reference case on cuda:0 through dit-launch, in float32 (the CPU's tolerances:
#     final_latents and video within 1e-3) and in bfloat16 (final_latents within twice diffusers' own bf16
#     error on the same case, bench/bf16_reference.py);
#  3. with 2 or more GPUs, the parallel mixes over NCCL against the same references (float32, 1e-3);
#     then each attention kernel on one case, and the error of float8 GEMMs (--fp8_gemm) per family, stated;
#  4. time per step, MFU and peak memory at the real CogVideoX-2B shape (480 x 720 x 49, bf16; 10 of its 30
#     layers) against diffusers 0.32.2 with SDPA on the same torch wheel, in the same run
#     (bench/peer_step.sh BUILD_DIR --gpu; its goals are printed, not part of the exit status);
#  5. the cost model against measurements on the GPUs (bench/cost_model.sh, 1 to all GPUs, one rank each).
# The reference cases from words (wan21_tiny, wan22_tiny, flux_words_tiny, hunyuan15_tiny) and from words and a
# picture (the image-to-video cases of CogVideoX, Wan and HunyuanVideo-1.5) start from the seed alone: they check
# that the noise drawn for a GPU run is the CPU generator's, as diffusers draws it.
# Prints markdown tables. Exit status 0 when every reference case and the peer bench ran and passed.
# Usage: bench/gpu-check.sh [BUILD_DIR]   (default build-gpu)
#   GPU_CHECK_PREBUILT=1: BUILD_DIR already holds dit-worker, dit-launch, bench-make-model and
#   bench-compare-runs built against the LibTorch on this machine (a box with no network): nothing is
#   installed or built. PEER_PYTHON (bench/peer_step.sh) chooses the peer's Python. GPU_CHECK_COST_MODEL=0
#   leaves step 5 out (a short lease); GPU_CHECK_QUICK=1 keeps only the bfloat16 rows of step 2, then step 4.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-gpu}
goldens=${STUDIO_GOLDENS_DIR:-$root/../shared/goldens}
gpus=$(nvidia-smi --list-gpus 2>/dev/null | wc -l) || gpus=0  # no nvidia-smi: pipefail, not an exit
((gpus > 0)) || { echo "gpu-check: no NVIDIA GPU is visible (nvidia-smi lists none)" >&2; exit 2; }
[[ -d $goldens ]] || { echo "gpu-check: no reference cases in $goldens (set STUDIO_GOLDENS_DIR)" >&2; exit 2; }

if [[ ${GPU_CHECK_PREBUILT:-0} != 1 ]]; then
  "$root/packaging/install-deps.sh" --no-gui >&2
  cmake -S "$root" -B "$build" -G Ninja -DSTUDIO_BUILD_GUI=OFF >&2
  cmake --build "$build" --target dit-worker dit-launch bench-make-model bench-compare-runs >&2
fi
"$build/bin/dit-worker" --version

work=$(mktemp -d /tmp/dit-gpu-check-XXXXXX)
trap 'rm -rf "$work"' EXIT
failed=0
# diffusers 0.32.2's own bf16 error on each case (max abs of final_latents; bench/bf16_reference.py).
declare -A diffusers_bf16=([cogvx2b_tiny]=0.06607 [cogvx5b_tiny]=0.02274 [cogvx15_tiny]=0.04895 [flux_tiny]=0.1141)

# The dit-launch flags that replay a reference case (its sizes, steps, guidance, inputs and noise), one a line.
case_args() {
  python3 - "$goldens/$1" <<'EOF'
import json, sys
case = sys.argv[1]
g = json.load(open(f"{case}/golden.json"))
f = f"{case}/golden.safetensors"
args = ["--model", case, "--height", g["height"], "--width", g["width"],
        "--num_inference_steps", g["num_inference_steps"], "--guidance_scale", g["guidance_scale"]]
if "prompt" in g:  # from words and the seed alone
    args += ["--prompt", g["prompt"], "--seed", g["seed"], "--max_sequence_length", g["max_sequence_length"]]
    if g.get("negative_prompt") is not None: args += ["--negative_prompt", g["negative_prompt"]]
    if "guidance_scale_2" in g: args += ["--guidance_scale_2", g["guidance_scale_2"]]
else:  # from the recorded embeddings, initial latents and sampler noise
    args += ["--prompt_embeds", f, "--latents", f]
    if g["scheduler"] == "CogVideoXDPMScheduler": args += ["--sampler_noise", f]
for key in ("image", "last_image"):  # the image-to-video cases' pictures, in the case's folder
    if g.get(key): args += ["--" + key, f"{case}/{g[key]}"]
if "num_frames" in g: args += ["--num_frames", g["num_frames"]]  # images (FLUX) have none
if g.get("use_dynamic_cfg"): args.append("--use_dynamic_cfg")
print("\n".join(str(a) for a in args))
EOF
}

# check NAME CASE BOUND_LATENTS BOUND_VIDEO FLAGS...: one row of the table.
check() {
  local name=$1 case=$2 bound=$3 video_bound=$4
  shift 4
  local file=${name//[^A-Za-z0-9_.-]/_}
  local out="$work/$file.safetensors" log="$work/$file.log" text err verr verdict
  local -a flags
  # Failures become rows; under set -e a failing command substitution or read would end the whole check.
  if ! text=$(case_args "$case" 2>"$log"); then
    echo "| $name | failed: cannot read the case: $(tail -1 "$log") | | |"
    failed=1
    return
  fi
  mapfile -t flags <<<"$text"
  if ! "$build/bin/dit-launch" "${flags[@]}" --save_tensors "$out" "$@" >"$log" 2>&1; then
    echo "| $name | failed: $(tail -1 "$log") | | |"
    failed=1
    return
  fi
  if ! text=$("$build/bin/bench-compare-runs" "$out" "$goldens/$case/golden.safetensors" 2>"$log.compare"); then
    echo "| $name | failed: bench-compare-runs: $(tail -1 "$log.compare") | | |"
    failed=1
    return
  fi
  read -r err _ verr <<<"$text"
  # A bound of "-": the error is stated, not checked (--fp8_gemm's, against the float32 reference).
  verdict=$(awk -v e="$err" -v b="$bound" -v v="$verr" -v vb="$video_bound" \
    'BEGIN { print b == "-" ? "stated" : (e <= b && v <= vb) ? "ok" : "FAIL" }')
  [[ $verdict != FAIL ]] || failed=1
  echo "| $name | $verdict | $err (bound $bound) | $verr (bound $video_bound) |"
}

echo
echo "## Reference cases on CUDA ($gpus GPU(s): $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1))"
echo
echo "| run | verdict | final_latents max error | video (image) max error |"
echo "|---|---|---|---|"
quick=${GPU_CHECK_QUICK:-0}  # 1: the bfloat16 rows of the cases from embeddings, then the step (a short lease)
for c in cogvx2b_tiny cogvx5b_tiny cogvx15_tiny flux_tiny; do
  ((quick)) || check "$c fp32" "$c" 1e-3 1e-3 --device cuda:0 --dtype float32
  bf=$(awk -v d="${diffusers_bf16[$c]}" 'BEGIN { print 2 * d }')
  check "$c bf16" "$c" "$bf" 1 --device cuda:0 --dtype bfloat16
done
((quick)) || for c in flux_words_tiny wan21_tiny wan22_tiny hunyuan15_tiny; do
  check "$c fp32 (from words)" "$c" 1e-3 1e-3 --device cuda:0 --dtype float32
done
((quick)) || for c in cogvx5b_i2v_tiny cogvx15_i2v_tiny wan21_i2v_tiny wan22_i2v_tiny wan22_ti2v_tiny hunyuan15_i2v_tiny; do
  check "$c fp32 (from words and a picture)" "$c" 1e-3 1e-3 --device cuda:0 --dtype float32
done
# Each attention kernel on its own (the rows above take auto's choice), and float8 GEMMs' error per family.
((quick)) || for k in flash cudnn efficient; do
  check "cogvx2b_tiny bf16 --attention_kernel $k" cogvx2b_tiny "$(awk -v d="${diffusers_bf16[cogvx2b_tiny]}" 'BEGIN { print 2 * d }')" 1 \
    --device cuda:0 --dtype bfloat16 --attention_kernel "$k"
done
((quick)) || for c in cogvx2b_tiny cogvx5b_tiny cogvx15_tiny flux_tiny wan21_tiny; do
  check "$c bf16 --fp8_gemm" "$c" - - --device cuda:0 --dtype bfloat16 --fp8_gemm
done
if ((gpus >= 2)); then
  for mix in "--ulysses_degree 2" "--ring_degree 2" "--use_cfg_parallel" "--ulysses_degree 2 --use_parallel_vae" \
             "--pipefusion_parallel_degree 2 --warmup_steps 4"; do
    for c in cogvx2b_tiny cogvx5b_tiny; do
      # shellcheck disable=SC2086  # a mix is several flags
      check "$c fp32 NCCL $mix" "$c" 1e-3 1e-3 --device cuda --dtype float32 $mix
    done
  done
  for mix in "--ulysses_degree 2 --use_parallel_vae" "--ring_degree 2" "--pipefusion_parallel_degree 2 --num_pipeline_patch 3 --warmup_steps 4"; do
    # shellcheck disable=SC2086  # a mix is several flags
    check "flux_tiny fp32 NCCL $mix" flux_tiny 1e-3 1e-3 --device cuda --dtype float32 $mix
  done
  if ((gpus >= 4)); then
    check "cogvx2b_tiny fp32 NCCL ulysses 2 x ring 2" cogvx2b_tiny 1e-3 1e-3 --device cuda --dtype float32 \
      --ulysses_degree 2 --ring_degree 2
  fi
else
  echo
  echo "One GPU: the NCCL parallel mixes need 2 or more."
fi

echo
if ! "$root/bench/peer_step.sh" "$build" --gpu; then
  echo "bench/peer_step.sh $build --gpu failed (its messages are above)"
  failed=1
fi
[[ ${GPU_CHECK_COST_MODEL:-1} == 1 ]] || exit $failed
echo
echo "## The cost model against measurements on the GPUs"
echo
counts=$(seq "$gpus")
# shellcheck disable=SC2086  # one argument per process count
if ! "$root/bench/cost_model.sh" "$build" 4 3 $counts; then
  echo "bench/cost_model.sh $build 4 3 $counts failed (its messages are above)"
  failed=1
fi
exit $failed

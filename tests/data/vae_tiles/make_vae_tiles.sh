#!/usr/bin/env bash
# Remakes the tiled-VAE references here from diffusers itself (bench/vae_tiled_reference.py): 0.35.2 for the
# Wan2.1 VAE and CogVideoX's, 0.42.1 for the Wan2.2 VAE (0.35.2's tiling fails on its patches). Each file holds,
# for an input of randn(seed 0) clamped to [-1, 1] at 64 x 96 pixels: the tiled encode's moments of 1 frame
# (moments_tiled_1) and of 5 (moments_tiled_5, Wan), and the tiled decode of the 1-frame latents z_1
# (decoded_tiled_1). Tiles: Wan 32 x 32 pixels every 24 (a quarter overlaps); CogVideoX 48 x 40, its overlaps
# of a sixth and a fifth; HunyuanVideo-1.5 (0.42.1) 64 x 64 every 48.
# Usage: PY35=<python with diffusers 0.35.2> PY42=<python with diffusers 0.42.1> tests/data/vae_tiles/make_vae_tiles.sh
# (torch from the project's wheel: PYTHONPATH=.deps/libtorch-2.15.0).
set -euo pipefail
cd "$(dirname "$0")/../../.."
goldens=${STUDIO_GOLDENS_DIR:-../shared/goldens}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
wan=(--tile_h 32 --tile_w 32 --stride_h 24 --stride_w 24)
cog=(--tile_h 48 --tile_w 40 --overlap_h 0.16666666666666666 --overlap_w 0.2)
for frames in 1 5; do
  "$PY35" bench/vae_tiled_reference.py "$goldens/wan21_i2v_tiny/vae" "$tmp/wan21_$frames.safetensors" --height 64 --width 96 --frames "$frames" "${wan[@]}"
  "$PY42" bench/vae_tiled_reference.py "$goldens/wan22_ti2v_tiny/vae" "$tmp/wan22_$frames.safetensors" --height 64 --width 96 --frames "$frames" "${wan[@]}"
  "$PY42" bench/vae_tiled_reference.py "$goldens/hunyuan15_i2v_tiny/vae" "$tmp/hunyuan15_$frames.safetensors" --height 64 --width 96 --frames "$frames" --tile_h 64 --tile_w 64
done
"$PY35" bench/vae_tiled_reference.py "$goldens/cogvx5b_i2v_tiny/vae" "$tmp/cogvideox_1.safetensors" --height 64 --width 96 --frames 1 "${cog[@]}"
"$PY35" - "$tmp" <<'PY'
import os, sys
from safetensors.torch import load_file, save_file
tmp = sys.argv[1]
for case in ("wan21", "wan22", "cogvideox", "hunyuan15"):
    one = load_file(f"{tmp}/{case}_1.safetensors")
    out = {"moments_tiled_1": one["moments_tiled"], "z_1": one["z"], "decoded_tiled_1": one["decoded_tiled"]}
    if os.path.exists(f"{tmp}/{case}_5.safetensors"):
        out["moments_tiled_5"] = load_file(f"{tmp}/{case}_5.safetensors")["moments_tiled"]
    save_file({k: v.contiguous() for k, v in out.items()}, f"tests/data/vae_tiles/{case}.safetensors")
PY

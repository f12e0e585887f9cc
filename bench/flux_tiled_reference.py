"""Our tiled FLUX VAE decode against diffusers' own (AutoencoderKL.enable_tiling, 0.32.2), on flux_tiny, whose
VAE's sample size (64 pixels) makes its 64 x 96 image two tiles wide. Run in the bench venv:
    build/bin/dit-launch --model ../shared/goldens/flux_tiny --height 64 --width 96 --num_inference_steps 4 \\
        --guidance_scale 3.5 --prompt_embeds ../shared/goldens/flux_tiny/golden.safetensors \\
        --latents ../shared/goldens/flux_tiny/golden.safetensors --enable_tiling --save_tensors /tmp/tiled.safetensors
    build/bench-venv/bin/python bench/flux_tiled_reference.py ../shared/goldens/flux_tiny /tmp/tiled.safetensors"""
import sys

import torch
from diffusers import AutoencoderKL
from safetensors.torch import load_file

case, ours_file = sys.argv[1], sys.argv[2]
golden = load_file(f"{case}/golden.safetensors")
vae = AutoencoderKL.from_pretrained(f"{case}/vae")
vae.enable_tiling()
with torch.no_grad():
    reference = vae.decode(golden["vae_input"], return_dict=False)[0]
ours = load_file(ours_file)["image"]
print(f"tiled image, ours vs diffusers: max {(ours - reference).abs().max().item():.3g}; "
      f"diffusers tiled vs untiled (how much tiling changes it here): {(golden['image'] - reference).abs().max().item():.3g}")

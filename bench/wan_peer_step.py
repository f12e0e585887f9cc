#!/usr/bin/env python3
# diffusers' WanTransformer3DModel on the same weights and sizes as our run: one step is its two calls (the
# prompt's and the negative prompt's, 512 text rows each), as WanPipeline and WanImageToVideoPipeline call it.
# An image-to-video folder (in_channels 36) gets the pipeline's 20 condition channels beside the 16 latent ones and
# the CLIP image embedding (257 rows of 1280) on both calls; values are random (the time does not depend on them).
# Usage: wan_peer_step.py FOLDER STEPS HEIGHT WIDTH FRAMES
import json, sys, time, torch
from diffusers import WanTransformer3DModel
from safetensors.torch import load_file
torch.set_num_threads(2)
folder, steps, height, width, frames = sys.argv[1], *map(int, sys.argv[2:6])
cfg = json.load(open(folder + "/transformer/config.json"))
# Built from its config and given the file's weights (from_pretrained wants accelerate for this model).
m = WanTransformer3DModel.from_config(cfg).eval()
m.load_state_dict(load_file(folder + "/transformer/diffusion_pytorch_model.safetensors"), strict=True)
m.float()
g = torch.Generator().manual_seed(0)
shape = (1, 16, (frames - 1) // 4 + 1, height // 8, width // 8)
latents = torch.randn(*shape, generator=g)
extra = {}
if cfg["in_channels"] == 36:
    latents = torch.cat([latents, torch.randn(1, 20, *shape[2:], generator=g)], 1)
    extra["encoder_hidden_states_image"] = torch.randn(1, 257, cfg["image_dim"], generator=g)
texts = [torch.randn(1, 512, cfg["text_dim"], generator=g) for _ in range(2)]
times = []
with torch.no_grad():
    for i in range(steps):
        t0 = time.perf_counter()
        for text in texts:
            m(hidden_states=latents, timestep=torch.tensor([999.0]), encoder_hidden_states=text, return_dict=False,
              **extra)
        times.append(time.perf_counter() - t0)
        print(f"step {i + 1}: {times[-1]:.2f} s", flush=True)
print(f"diffusers {__import__('diffusers').__version__}, torch {torch.__version__}: steps after the first "
      f"{sum(times[1:]) / max(1, len(times) - 1):.2f} s")

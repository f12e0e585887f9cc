#!/usr/bin/env python3
# diffusers 0.42.1's HunyuanVideo15Transformer3DModel on the same weights and sizes as our run: one step is its
# two calls (the prompt's, the negative prompt's), texts padded to 1000 Qwen and 256 ByT5 rows with masks and
# the picture's 729 rows zeroed, as HunyuanVideo15Pipeline calls it from words.
# Usage: hunyuan15_peer_step.py FOLDER STEPS [HEIGHT WIDTH FRAMES]   (default 480 x 848 x 9)
import sys, time, torch
from diffusers import HunyuanVideo15Transformer3DModel
torch.set_num_threads(2)
folder, steps = sys.argv[1], int(sys.argv[2])
height, width, frames = map(int, sys.argv[3:6]) if len(sys.argv) > 5 else (480, 848, 9)
m = HunyuanVideo15Transformer3DModel.from_pretrained(folder + "/transformer", torch_dtype=torch.float32).eval()
g = torch.Generator().manual_seed(0)
lat = torch.randn(1, 65, (frames - 1) // 4 + 1, height // 16, width // 16, generator=g)
def inputs(q, b):
    e = torch.zeros(1, 1000, 3584); e[:, :q] = torch.randn(1, q, 3584, generator=g)
    em = torch.zeros(1, 1000, dtype=torch.long); em[:, :q] = 1
    e2 = torch.zeros(1, 256, 1472); e2[:, :b] = torch.randn(1, b, 1472, generator=g)
    em2 = torch.zeros(1, 256, dtype=torch.long); em2[:, :b] = 1
    return dict(encoder_hidden_states=e, encoder_attention_mask=em, encoder_hidden_states_2=e2,
                encoder_attention_mask_2=em2, image_embeds=torch.zeros(1, 729, 1152))
cond, uncond = inputs(100, 20), inputs(80, 0)
times = []
with torch.no_grad():
    for i in range(steps):
        t0 = time.perf_counter()
        for kw in (cond, uncond):
            m(hidden_states=lat, timestep=torch.tensor([999.0]), return_dict=False, **kw)
        times.append(time.perf_counter() - t0)
        print(f"step {i + 1}: {times[-1]:.2f} s", flush=True)
print(f"diffusers {__import__('diffusers').__version__}, torch {torch.__version__}: steps after the first {sum(times[1:]) / max(1, len(times) - 1):.2f} s")

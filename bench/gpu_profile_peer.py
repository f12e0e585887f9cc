# Where a step's GPU time goes, by kernel, in diffusers' CogVideoX-2B transformer at the real size (480x720x49,
# CFG batch 2, bfloat16, 2 of its 30 layers, random weights), eager: the elementwise work that fused kernels
# would take out of a step shows up here as the kernels besides the GEMMs and the attention. torch.profiler,
# one forward after a warm-up; prints the kernels by share of the CUDA time, grouped. Usage: python3
# bench/gpu_profile_peer.py
import collections

import torch
from diffusers import CogVideoXTransformer3DModel
from torch.profiler import ProfilerActivity, profile

dev, bf16 = torch.device("cuda:0"), torch.bfloat16
model = CogVideoXTransformer3DModel(num_layers=2, sample_height=60, sample_width=90, sample_frames=49).to(dev, bf16).eval()
latents = torch.randn(2, 13, 16, 60, 90, device=dev, dtype=bf16)
text = torch.randn(2, 226, 4096, device=dev, dtype=bf16)
t = torch.tensor([500, 500], device=dev)
with torch.no_grad():
    model(hidden_states=latents, encoder_hidden_states=text, timestep=t)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        model(hidden_states=latents, encoder_hidden_states=text, timestep=t)
        torch.cuda.synchronize()


def group(name):
    n = name.lower()
    if "gemm" in n or "cutlass" in n or "sm90_xmma" in n or "nvjet" in n:
        return "GEMM (linear layers)"
    if "flash" in n or "fmha" in n or "attention" in n or "cudnn" in n:
        return "attention"
    if "layer_norm" in n or "layernorm" in n:
        return "layer norm"
    if "gelu" in n:
        return "GELU"
    if "cat" in n or "copy" in n or "transpose" in n or "contiguous" in n:
        return "copies, cat, transposes"
    return "other elementwise"


totals, kernels = collections.Counter(), collections.Counter()
for e in prof.events():
    if e.device_type == torch.autograd.DeviceType.CUDA:
        totals[group(e.name)] += e.device_time_total
        kernels[e.name[:90]] += e.device_time_total
whole = sum(totals.values())
print(f"## diffusers' CogVideoX-2B forward, 2 layers at 480x720x49, CFG batch 2, bf16, eager ({torch.cuda.get_device_name(dev)})")
print()
print(f"CUDA time of one forward: {whole / 1e3:.1f} ms")
print()
print("| group | ms | share |")
print("|---|---|---|")
for g, us in totals.most_common():
    print(f"| {g} | {us / 1e3:.2f} | {us / whole:.1%} |")
print()
print("| kernel | ms | share |")
print("|---|---|---|")
for k, us in kernels.most_common(14):
    print(f"| `{k}` | {us / 1e3:.2f} | {us / whole:.1%} |")

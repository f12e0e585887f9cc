"""How far diffusers' own bfloat16 result is from its float32 reference on a golden case: the yardstick
for our bf16 test (ours must stay within twice this). Run in the bench venv (bench/peer_step.sh makes it):
    build/bench-venv/bin/python bench/bf16_reference.py ../shared/goldens/cogvx2b_tiny [...] (flux_tiny too)
Prints, per case, the max and mean absolute error of final_latents against the case's golden, in float32
(the check that the inputs are replayed right: it must be ~1e-6) and in bfloat16."""
import json
import sys

import torch
from safetensors.torch import load_file
from diffusers import (CogVideoXPipeline, CogVideoXTransformer3DModel, CogVideoXDDIMScheduler, CogVideoXDPMScheduler,
                       FluxPipeline, FluxTransformer2DModel, FlowMatchEulerDiscreteScheduler)
import diffusers.schedulers.scheduling_dpm_cogvideox as dpm


def flux_error(case, dtype):
    """FluxPipeline from embeddings (flux_tiny): the packed final latents against the golden."""
    golden = json.load(open(f"{case}/golden.json"))
    g = load_file(f"{case}/golden.safetensors")
    transformer = FluxTransformer2DModel.from_pretrained(f"{case}/transformer", torch_dtype=dtype)
    scheduler = FlowMatchEulerDiscreteScheduler.from_pretrained(f"{case}/scheduler")
    pipe = FluxPipeline(scheduler=scheduler, vae=None, text_encoder=None, tokenizer=None, text_encoder_2=None,
                        tokenizer_2=None, transformer=transformer)
    pipe.vae_scale_factor = golden["vae_scale_factor"]  # no VAE object to read it from
    out = pipe(prompt_embeds=g["prompt_embeds"].to(dtype), pooled_prompt_embeds=g["pooled_prompt_embeds"].to(dtype),
               latents=g["latents_init"].to(dtype), height=golden["height"], width=golden["width"],
               num_inference_steps=golden["num_inference_steps"], guidance_scale=golden["guidance_scale"],
               output_type="latent", return_dict=False)[0]
    diff = (out.float() - g["final_latents"]).abs()
    return diff.max().item(), diff.mean().item()


def error(case, dtype):
    golden = json.load(open(f"{case}/golden.json"))
    g = load_file(f"{case}/golden.safetensors")
    if golden["scheduler"] == "FlowMatchEulerDiscreteScheduler":
        return flux_error(case, dtype)
    scheduler_class = {"CogVideoXDDIMScheduler": CogVideoXDDIMScheduler,
                       "CogVideoXDPMScheduler": CogVideoXDPMScheduler}[golden["scheduler"]]
    transformer = CogVideoXTransformer3DModel.from_pretrained(f"{case}/transformer", torch_dtype=dtype)
    scheduler = scheduler_class.from_pretrained(f"{case}/scheduler")
    pipe = CogVideoXPipeline(tokenizer=None, text_encoder=None, vae=None, transformer=transformer,
                             scheduler=scheduler)
    if "scheduler_noise" in g:  # the DPM sampler's noise of each step (either of its two draws), as recorded
        noise, plain_step = iter(g["scheduler_noise"]), scheduler.step

        def step(*args, **kwargs):
            n = next(noise)
            dpm.randn_tensor = lambda *a, **k: n.to(k.get("dtype") or torch.float32)
            return plain_step(*args, **kwargs)
        scheduler.step = step
    out = pipe(prompt_embeds=g["prompt_embeds"].to(dtype), negative_prompt_embeds=g["negative_prompt_embeds"].to(dtype),
               latents=g["latents_init"].to(dtype), height=golden["height"], width=golden["width"],
               num_frames=golden["num_frames"], num_inference_steps=golden["num_inference_steps"],
               guidance_scale=golden["guidance_scale"], use_dynamic_cfg=golden["use_dynamic_cfg"],
               output_type="latent", return_dict=False)[0]
    diff = (out.float() - g["final_latents"]).abs()
    return diff.max().item(), diff.mean().item()


for case in sys.argv[1:]:
    name = case.rstrip("/").split("/")[-1]
    for dtype in (torch.float32, torch.bfloat16):  # float32 first: it must reproduce the golden (the check)
        worst, mean = error(case, dtype)
        print(f"{name}: diffusers {str(dtype)[6:]} vs the golden: final_latents max {worst:.4g} mean {mean:.4g}")

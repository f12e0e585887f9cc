# The Python half of bench/peer_step.sh, run in its venv (torch, diffusers 0.32.2).
#   peer_step.py latents MODEL OUT          latents_init [1, F/4+1, 16, H/8, W/8] (seed 0) for the model's
#                                           sample size (transformer/config.json)
#   peer_step.py compare MODEL WORK STEPS COMMAND LOAD   times diffusers on the same inputs (WORK:
#                                           latents, ours.safetensors, events.jsonl), prints the table
#   peer_step.py compare-gpu MODEL WORK STEPS COMMAND LOAD   the same on cuda:0 in bfloat16, no decoding
import json
import os
import platform
import statistics
import sys
import time

import torch
from safetensors.torch import load_file, save_file

THREADS = 2  # the CPU mode's threads per side
torch.set_num_threads(THREADS)


def sample_size(model):
    cfg = json.load(open(os.path.join(model, "transformer", "config.json")))
    return cfg["sample_height"] * 8, cfg["sample_width"] * 8, cfg["sample_frames"]


def make_latents(model, out):
    height, width, frames = sample_size(model)
    torch.manual_seed(0)
    save_file({"latents_init": torch.randn(1, (frames - 1) // 4 + 1, 16, height // 8, width // 8)}, out)


def step_flops(model, height, width, frames):
    """Multiply-adds x 2 of one transformer forward on the CFG batch of 2. Per sample, with N = Nv + Nt
    tokens (Nv = F/4+1 latent frames x (H/16) x (W/16) patches, Nt = 226 text tokens), width D, L layers:
      per layer: q, k, v, out projections 4 N D^2; feed-forward D -> 4D -> D 8 N D^2;
                 Q K^T and attention x V over all heads 2 N^2 D
      once: text projection Nt x 4096 x D; patch embedding and output projection 2 Nv x (16 x 2 x 2) x D
    The timestep and adaptive-norm linears act on one row per sample (under 0.01%) and are left out."""
    cfg = json.load(open(os.path.join(model, "transformer", "config.json")))
    d = cfg["num_attention_heads"] * cfg["attention_head_dim"]
    p, c = cfg["patch_size"], cfg["in_channels"]
    nv = ((frames - 1) // 4 + 1) * (height // 8 // p) * (width // 8 // p)
    nt = cfg["max_text_seq_length"]
    n = nv + nt
    macs = cfg["num_layers"] * (12 * n * d * d + 2 * n * n * d) + nt * cfg["text_embed_dim"] * d + 2 * nv * c * p * p * d
    return 2 * 2 * macs, nv, nt


def gemm_peak():
    a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
    for _ in range(3):
        a @ b
    best = float("inf")
    for _ in range(10):
        t = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t)
    return 2 * 2048**3 / best / 1e9


def load_part(cls, model, sub, may_miss=()):
    m = cls.from_config(cls.load_config(model, subfolder=sub))
    r = m.load_state_dict(load_file(os.path.join(model, sub, "diffusion_pytorch_model.safetensors")), strict=False)
    bad = [k for k in r.missing_keys if not k.startswith(may_miss)] + r.unexpected_keys
    if bad:
        sys.exit(f"{sub}: the weights do not match diffusers' model: {bad[:5]}")
    return m.eval()


def ours_from_events(path):
    events = [json.loads(line) for line in open(path)]
    steps = {e["body"]["step"]: e["body"]["seconds"] for e in events if e["kind"] == "progress"}
    done = [e["body"] for e in events if e["kind"] == "done"][0]
    return [steps[k] for k in sorted(steps)], done["seconds_decoding"]


def compare(model, work, steps, command, load):
    from diffusers import AutoencoderKLCogVideoX, CogVideoXDDIMScheduler, CogVideoXPipeline, CogVideoXTransformer3DModel
    import diffusers

    peak = gemm_peak()
    height, width, frames = sample_size(model)
    pipe = CogVideoXPipeline(
        tokenizer=None, text_encoder=None,
        vae=load_part(AutoencoderKLCogVideoX, model, "vae", may_miss="encoder."),  # we have no encoder
        transformer=load_part(CogVideoXTransformer3DModel, model, "transformer"),
        scheduler=CogVideoXDDIMScheduler.from_pretrained(model, subfolder="scheduler"))
    pipe.set_progress_bar_config(disable=True)
    embeds = load_file(os.path.join(model, "embeds.safetensors"))
    stamps = []

    def on_step(pipe, i, t, kwargs):
        stamps.append(time.perf_counter())
        return {}

    start = time.perf_counter()
    latents = pipe(prompt_embeds=embeds["prompt_embeds"], negative_prompt_embeds=embeds["negative_prompt_embeds"],
                   latents=load_file(os.path.join(work, "latents.safetensors"))["latents_init"],
                   height=height, width=width, num_frames=frames, num_inference_steps=steps, guidance_scale=6.0,
                   use_dynamic_cfg=False, output_type="latent", callback_on_step_end=on_step).frames
    peer_steps = [b - a for a, b in zip([start] + stamps, stamps)]

    ours = load_file(os.path.join(work, "ours.safetensors"))
    with torch.no_grad():  # both sides decode our final latents
        t = time.perf_counter()
        video = pipe.decode_latents(ours["final_latents"])
        peer_decode = time.perf_counter() - t

    our_steps, our_decode = ours_from_events(os.path.join(work, "events.jsonl"))
    flops, nv, nt = step_flops(model, height, width, frames)
    med = lambda s: statistics.median(s[1:] if len(s) > 1 else s)
    o, d = med(our_steps), med(peer_steps)
    row = lambda name, s, dec: f"| {name} | {s:.2f} | {flops / s / 1e9:.1f} | {flops / s / 1e9 / peak:.1%} | {dec:.1f} |"
    layers = json.load(open(os.path.join(model, "transformer", "config.json")))["num_layers"]
    cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))

    print(f"CogVideoX-2B shape (30 heads x 64), {layers} layers, {width}x{height}x{frames} ({nv} video + {nt} text "
          f"tokens), {steps} DDIM steps, guidance 6 (CFG batch of 2), float32, CPU, {THREADS} threads each; "
          f"one step = {flops / 1e12:.3f} TFLOP; fp32 GEMM peak (2048^3 matmul, torch {torch.__version__}) "
          f"{peak:.1f} GFLOP/s")
    print()
    print("| side | s/step (median of steps 2..) | GFLOP/s | fraction of GEMM peak | decode s |")
    print("|---|---|---|---|---|")
    print(row("DiT Studio (dit-launch)", o, our_decode))
    print(row(f"diffusers {diffusers.__version__} (torch {torch.__version__})", d, peer_decode))
    print(f"| ours/diffusers | {o / d:.2f} | | | {our_decode / peer_decode:.2f} |")
    print()
    print(f"Same computation: final latents max |ours - diffusers| "
          f"{(ours['final_latents'] - latents).abs().max().item():.2e}, decoded video "
          f"{(ours['video'] - video).abs().max().item():.2e}. Per step, ours: "
          + " ".join(f"{s:.2f}" for s in our_steps) + "; diffusers: " + " ".join(f"{s:.2f}" for s in peer_steps)
          + f". Decode: {latents.shape[1]} latent frames -> {video.shape[2]} frames of {width}x{height}, the real "
          "CogVideoX-2b VAE config; ours includes opening the VAE's weights.")
    print(f"Machine: {cpu} ({torch.backends.cpu.get_cpu_capability()}), {os.cpu_count()} cores, {THREADS} threads "
          f"per side, {platform.platform()}, load average before the run {load}. "
          f"Command: {command}")


def gemm_peak_gpu(n=8192):
    """TFLOP/s of an n^3 bfloat16 matmul on cuda:0, best of 10 after 3 warm-ups, synchronized."""
    a, b = (torch.randn(n, n, device="cuda:0", dtype=torch.bfloat16) for _ in range(2))
    best = float("inf")
    for i in range(13):
        torch.cuda.synchronize()
        t = time.perf_counter()
        a @ b
        torch.cuda.synchronize()
        if i >= 3:
            best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best / 1e12


def ours_gpu_from_events(path):
    """Our seconds per step on the GPU, the slowest rank's (a step's time ends with a device sync), and the
    peak device bytes per rank."""
    events = [json.loads(line) for line in open(path)]
    steps, peaks = {}, {}
    for e in events:
        if e["kind"] in ("progress", "done"):
            r = e["body"]["rank"]
            peaks[r] = max(peaks.get(r, 0), e["body"]["device_peak"])
        if e["kind"] == "progress":
            k = e["body"]["step"]
            steps[k] = max(steps.get(k, 0), e["body"]["seconds"])
    return [steps[k] for k in sorted(steps)], peaks


def compare_gpu(model, work, steps, command, load):
    from diffusers import CogVideoXDDIMScheduler, CogVideoXPipeline, CogVideoXTransformer3DModel
    import diffusers

    dev, bf16 = torch.device("cuda:0"), torch.bfloat16
    torch.set_num_threads(os.cpu_count())  # the CPU only makes diffusers' model (random init, then our weights)
    peak = gemm_peak_gpu()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(dev)  # from here: weights + activations, as ours counts from its start
    height, width, frames = sample_size(model)
    transformer = load_part(CogVideoXTransformer3DModel, model, "transformer").to(dev, bf16)
    processors = ", ".join(sorted({type(p).__name__ for p in transformer.attn_processors.values()}))
    pipe = CogVideoXPipeline(tokenizer=None, text_encoder=None, vae=None, transformer=transformer,
                             scheduler=CogVideoXDDIMScheduler.from_pretrained(model, subfolder="scheduler"))
    pipe.set_progress_bar_config(disable=True)
    embeds = {k: v.to(dev, bf16) for k, v in load_file(os.path.join(model, "embeds.safetensors")).items()}
    init = load_file(os.path.join(work, "latents.safetensors"))["latents_init"].to(dev, bf16)
    stamps = []

    def on_step(pipe, i, t, kwargs):
        torch.cuda.synchronize(dev)
        stamps.append(time.perf_counter())
        return {}

    def run_peer():
        stamps.clear()
        torch.cuda.synchronize(dev)
        start = time.perf_counter()
        out = pipe(prompt_embeds=embeds["prompt_embeds"], negative_prompt_embeds=embeds["negative_prompt_embeds"],
                   latents=init, height=height, width=width, num_frames=frames, num_inference_steps=steps,
                   guidance_scale=6.0, use_dynamic_cfg=False, output_type="latent", callback_on_step_end=on_step).frames
        return out, [b - a for a, b in zip([start] + stamps, stamps)]

    latents, peer_steps = run_peer()
    peer_mem = torch.cuda.max_memory_allocated(dev)
    compile_mode = os.environ.get("PEER_COMPILE", "")
    if compile_mode:  # the same transformer compiled; its first step compiles
        pipe.transformer = torch.compile(transformer, mode=None if compile_mode == "default" else compile_mode)
        torch.cuda.reset_peak_memory_stats(dev)
        compiled_latents, compiled_steps = run_peer()
        compiled_mem = torch.cuda.max_memory_allocated(dev)

    ours = load_file(os.path.join(work, "ours.safetensors"))["final_latents"]
    our_steps, our_peaks = ours_gpu_from_events(os.path.join(work, "events.jsonl"))
    flops, nv, nt = step_flops(model, height, width, frames)
    cfg = json.load(open(os.path.join(model, "transformer", "config.json")))
    layers, heads, head_dim = cfg["num_layers"], cfg["num_attention_heads"], cfg["attention_head_dim"]
    med = lambda s: statistics.median(s[1:])
    o, d = med(our_steps), med(peer_steps)
    tflops = lambda s: flops / s / 1e12
    gib = lambda b: f"{b / 2**30:.2f}"
    row = lambda name, s, mem: f"| {name} | {s:.3f} | {tflops(s):.1f} | {tflops(s) / peak:.1%} | {mem} |"
    gpu = torch.cuda.get_device_name(dev)
    cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    times = lambda s: " ".join(f"{x:.3f}" for x in s)

    name, real_layers = ("CogVideoX-5B", 42) if heads == 48 else ("CogVideoX-2B", 30)
    print(f"## One denoising step at the real {name} shape, against diffusers {diffusers.__version__} "
          f"(bfloat16, {gpu})")
    print()
    print(f"{name} shape ({heads} heads x {head_dim}), {layers} of the real {real_layers} layers, {width}x{height}x{frames} "
          f"({nv} video + {nt} text tokens), {steps} DDIM steps, guidance 6 (CFG batch of 2), bfloat16 on cuda:0; one "
          f"step = {flops / 1e12:.1f} TFLOP. Seconds and FLOP per step grow about linearly with the layers ({real_layers} "
          f"layers: about {real_layers / layers:.1f}x these s/step at the same MFU); of the peak memory, the weights grow with the layers, "
          f"the activations do not. bf16 GEMM peak (8192^3 matmul, best of 10, torch {torch.__version__}, CUDA "
          f"{torch.version.cuda}) {peak:.1f} TFLOP/s; MFU = FLOP per step / s per step / that peak. No decoding "
          f"(the model has no VAE: the real one at this size costs more than the steps here).")
    print()
    print("| side | s/step (median of steps 2..) | TFLOP/s | MFU | peak GPU memory GiB |")
    print("|---|---|---|---|---|")
    print(row("DiT Studio (dit-launch)", o, " / ".join(gib(our_peaks[r]) for r in sorted(our_peaks))))
    print(row(f"diffusers {diffusers.__version__} (torch {torch.__version__}, SDPA)", d, gib(peer_mem)))
    print(f"| ours/diffusers | {o / d:.2f} | | | {max(our_peaks.values()) / peer_mem:.2f} |")
    best = d
    if compile_mode:
        c = med(compiled_steps)
        best = c
        print(row(f"diffusers, torch.compile(mode={compile_mode}) (first step, compiling: {compiled_steps[0]:.1f} s)", c,
                  gib(compiled_mem)))
        print(f"| ours/compiled diffusers | {o / c:.2f} | | | {max(our_peaks.values()) / compiled_mem:.2f} |")
    variants_file = os.path.join(work, "variants.txt")
    if os.path.exists(variants_file) and os.path.getsize(variants_file):
        print()
        print("Our variants, same inputs, one run each (difference: final latents against our default run above):")
        print()
        print("| DiT Studio with | s/step | TFLOP/s | MFU | peak GPU memory GiB | / best diffusers | final latents max / mean abs difference |")
        print("|---|---|---|---|---|---|---|")
        for line in open(variants_file):
            folder, flags = line.rstrip("\n").split("\t")
            v_steps, v_peaks = ours_gpu_from_events(os.path.join(folder, "events.jsonl"))
            v = med(v_steps)
            diff = (load_file(os.path.join(folder, "ours.safetensors"))["final_latents"] - ours).abs()
            print(f"{row(flags, v, gib(max(v_peaks.values())))[:-1]} {v / best:.2f} | "
                  f"{diff.max().item():.3g} / {diff.mean().item():.3g} |")
    print()
    print(f"Goals (issue #39): ours per step <= 0.8x the best diffusers ({best:.3f} s): {o / best:.2f}, "
          f"{'met' if o / best <= 0.8 else 'NOT met'}; our MFU >= 65%: {tflops(o) / peak:.1%}, "
          f"{'met' if tflops(o) / peak >= 0.65 else 'NOT met'}.")
    print()
    print(f"Per step, ours (progress events, each step ending with a device sync): {times(our_steps)}; diffusers "
          f"(torch.cuda.synchronize() at each step's end): {times(peer_steps)}. Peak memory: ours per rank from the "
          f"events (device_peak), diffusers torch.cuda.max_memory_allocated() from loading on. Diffusers' attention: "
          f"{processors}. Final latents max |ours - diffusers| {(ours - latents.float().cpu()).abs().max().item():.2e} "
          f"(both bf16; max |latents| {ours.abs().max().item():.2f}; the reference cases check accuracy).")
    print(f"Machine: {gpu} ({torch.cuda.get_device_properties(dev).total_memory / 2**30:.0f} GiB), {cpu}, "
          f"{os.cpu_count()} cores, {platform.platform()}, load average before the run {load}. Command: {command}")


if __name__ == "__main__":
    if sys.argv[1] == "latents":
        make_latents(sys.argv[2], sys.argv[3])
    else:
        (compare_gpu if sys.argv[1] == "compare-gpu" else compare)(
            sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6])

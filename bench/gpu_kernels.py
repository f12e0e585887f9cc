# The kernels issue #39 chooses between, measured alone on cuda:0 with the machine's torch (no engine):
#  1. attention at the real sizes (CogVideoX-2B 480x720x49: 17,776 tokens, 30 heads x 64; Wan2.1-14B 480p 81
#     frames: 32,760 tokens, 40 x 128), CFG batch 2, bfloat16: flash, cuDNN and memory-efficient, each with and
#     without the log-sum-exp (Ring's), ms per call and the largest difference from flash (output and lse);
#  2. the linear layers of a CogVideoX-2B block at that size (M = 2 x 17,776 rows): bfloat16 against float8
#     (at::_scaled_mm, rowwise scales, fast accumulation), with the quantization of the input apart, and the
#     product's relative error against bfloat16.
# Prints markdown tables. Usage: python3 bench/gpu_kernels.py
import time

import torch

dev = torch.device("cuda:0")
aten = torch.ops.aten


def timed(fn, reps=10):
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / reps


def attention_table():
    print("| shape [B, heads, S, d] | kernel | ms | TFLOP/s | ms with lse | max diff from flash (out / lse) |")
    print("|---|---|---|---|---|---|")
    for b, h, s, d in [(2, 30, 17776, 64), (2, 40, 32760, 128)]:
        q, k, v = (torch.randn(b, s, h, d, device=dev, dtype=torch.bfloat16).transpose(1, 2) for _ in range(3))
        flops = 4 * b * h * s * s * d
        runs = {
            "flash": lambda lse: aten._scaled_dot_product_flash_attention(q, k, v)[:2],
            "cudnn": lambda lse: aten._scaled_dot_product_cudnn_attention(q, k, v, None, lse)[:2],
            "efficient": lambda lse: aten._scaled_dot_product_efficient_attention(q, k, v, None, lse)[:2],
        }
        ref_out, ref_lse = runs["flash"](True)
        for name, fn in runs.items():
            try:
                ms = timed(lambda: fn(False))
                ms_lse = timed(lambda: fn(True))
                out, lse = fn(True)
                lse = lse.flatten(2)[..., :s].float()
                d_out = (out.float() - ref_out.float()).abs().max().item()
                d_lse = (lse - ref_lse.float()).abs().max().item()
                print(f"| {[b, h, s, d]} | {name} | {ms:.2f} | {flops / ms / 1e9:.0f} | {ms_lse:.2f} | {d_out:.2e} / {d_lse:.2e} |")
            except RuntimeError as e:
                print(f"| {[b, h, s, d]} | {name} | does not run: {str(e).splitlines()[0][:80]} | | | |")
        del q, k, v


def quantize_rows(m):
    scale = m.abs().amax(1, keepdim=True).float() / 448
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    return (m / scale).clamp_(-448, 448).to(torch.float8_e4m3fn), scale


def gemm_table():
    m = 2 * 17776
    print("| layer (K -> N) | bf16 ms | bf16 TFLOP/s | fp8 GEMM ms | fp8 TFLOP/s | quantize input ms | fp8 total / bf16 | rel. error |")
    print("|---|---|---|---|---|---|---|---|")
    total_bf16 = total_fp8 = 0.0
    for name, k, n in [("q, k, v", 1920, 5760), ("out", 1920, 1920), ("ff up", 1920, 7680), ("ff down", 7680, 1920)]:
        x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        w = torch.randn(n, k, device=dev, dtype=torch.bfloat16) / k**0.5
        bias = torch.randn(n, device=dev, dtype=torch.bfloat16)
        wq, ws = quantize_rows(w)
        ws = ws.view(1, n).contiguous()
        xq, xs = quantize_rows(x)
        flops = 2 * m * k * n
        ms_bf16 = timed(lambda: torch.nn.functional.linear(x, w, bias))
        ms_fp8 = timed(lambda: torch._scaled_mm(xq, wq.t(), xs, ws, bias=bias, out_dtype=torch.bfloat16, use_fast_accum=True))
        ms_q = timed(lambda: quantize_rows(x))
        ref = torch.nn.functional.linear(x.float(), w.float(), bias.float())
        got = torch._scaled_mm(xq, wq.t(), xs, ws, bias=bias, out_dtype=torch.bfloat16, use_fast_accum=True).float()
        rel = ((got - ref).norm() / ref.norm()).item()
        total_bf16 += ms_bf16
        total_fp8 += ms_fp8 + ms_q
        print(f"| {name} ({k} -> {n}) | {ms_bf16:.3f} | {flops / ms_bf16 / 1e9:.0f} | {ms_fp8:.3f} | "
              f"{flops / ms_fp8 / 1e9:.0f} | {ms_q:.3f} | {(ms_fp8 + ms_q) / ms_bf16:.2f} | {rel:.2e} |")
    print(f"| a block's linear layers | {total_bf16:.3f} | | | | | {total_fp8 / total_bf16:.2f} | |")


if __name__ == "__main__":
    print(f"## Kernels alone on {torch.cuda.get_device_name(dev)} (torch {torch.__version__}, CUDA {torch.version.cuda}, "
          f"cuDNN {torch.backends.cudnn.version()})")
    print()
    attention_table()
    print()
    gemm_table()

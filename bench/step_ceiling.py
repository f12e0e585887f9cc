# The best fraction of the fp32 GEMM peak one CPU step of a CogVideoX model can reach on this machine:
# the step's own kernels alone (every layer's linear layers, with distinct weights as in a real forward,
# and the CPU flash attention the engine calls), with no elementwise work at all, timed on the same torch
# as bench/peer_step.sh in the same run as the peak. Run it with the worker's allocator settings:
#   MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=68719476736 BUILD/bench-venv/bin/python bench/step_ceiling.py MODEL
# MODEL: the folder bench/peer_step.sh made (or any CogVideoX folder made by bench-make-model). Prints a table.
import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

from peer_step import THREADS, gemm_peak, sample_size, step_flops

torch.set_num_threads(THREADS)


def timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main(model):
    cfg = json.load(open(os.path.join(model, "transformer", "config.json")))
    heads, hd, layers = cfg["num_attention_heads"], cfg["attention_head_dim"], cfg["num_layers"]
    d = heads * hd
    height, width, frames = sample_size(model)
    step, nv, nt = step_flops(model, height, width, frames)
    b, n = 2, nv + nt  # the CFG batch
    torch.manual_seed(0)
    weights = [[(torch.randn(o, i) * 0.02, torch.randn(o) * 0.02) for o, i in ((3 * d, d), (d, d), (4 * d, d), (d, 4 * d))]
               for _ in range(layers)]
    x, h = torch.randn(b, n, d), torch.randn(b, n, 4 * d)
    q, k, v = (torch.randn(b, heads, n, hd) for _ in range(3))
    flash = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu

    def linears():
        for layer in weights:
            for w, bias in layer:
                F.linear(h if w.shape[1] == 4 * d else x, w, bias)

    def attention():
        for _ in range(layers):
            flash(q, k, v)

    linear_flop = layers * 2 * b * n * 12 * d * d
    attention_flop = layers * 2 * b * 2 * n * n * d
    linears(), attention()  # warm-up
    peaks, t_lin, t_att = [], [], []
    for _ in range(3):  # interleaved: the machine's speed drifts
        peaks.append(gemm_peak())
        t_lin.append(timed(linears))
        t_att.append(timed(attention))
    peak, lin, att = statistics.median(peaks), statistics.median(t_lin), statistics.median(t_att)
    gf = lambda flop, s: flop / s / 1e9
    ceiling = gf(linear_flop + attention_flop, lin + att)
    print(f"CogVideoX step kernels, {layers} layers, {nv} video + {nt} text tokens, CFG batch 2, float32, "
          f"{THREADS} threads, torch {torch.__version__}; medians of 3 interleaved rounds; "
          f"load average {os.getloadavg()[0]:.2f}\n")
    print("| kernels | GFLOP | seconds | GFLOP/s | fraction of peak |\n|---|---|---|---|---|")
    print(f"| fp32 GEMM peak (2048^3 matmul) | | | {peak:.1f} | 100% |")
    print(f"| linear layers (q/k/v, out, feed-forward; cold weights) | {linear_flop / 1e9:.0f} | {lin:.3f} | "
          f"{gf(linear_flop, lin):.1f} | {gf(linear_flop, lin) / peak:.1%} |")
    print(f"| CPU flash attention | {attention_flop / 1e9:.0f} | {att:.3f} | {gf(attention_flop, att):.1f} | "
          f"{gf(attention_flop, att) / peak:.1%} |")
    print(f"| both: the ceiling of a step with no other work | {(linear_flop + attention_flop) / 1e9:.0f} | "
          f"{lin + att:.3f} | {ceiling:.1f} | {ceiling / peak:.1%} |")
    print(f"\nA whole step counts {step / 1e9:.0f} GFLOP (bench/peer_step.py's count; the rest is the text, "
          f"patch and output projections).")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: step_ceiling.py MODEL")
    main(sys.argv[1])

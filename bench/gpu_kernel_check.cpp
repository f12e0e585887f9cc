// The engine's own CUDA kernels against their CPU references, on cuda:0 (bench/gpu-lease.sh runs it; exit
// status 1 on a mismatch). Today: the float8 row quantization of --fp8_gemm (engine/kernels/fp8_quantize.cu)
// must give the bytes and scales the CPU's ATen path gives, on rows of every size class (outliers, zeros,
// tiny values), and its time against the five ATen passes it replaces; then a whole float8 product on the
// GPU (at::_scaled_mm, fast accumulation) against the same product computed on the CPU from the same bytes;
// then the heads' norm and rotation (engine/kernels/head_rows.cu: CogVideoX's LayerNorm, FLUX's RMSNorm, Wan's
// rotation alone) against ATen's ops on the strided view each block hands it, the adaptive norm
// (engine/kernels/modulated_norm.cu) and GELU in the feed-forward GEMM's epilogue against ATen's passes, and
// their times.
// Prints markdown tables. Usage: bench-gpu-kernels
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

#include <ATen/Context.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/div.h>
#include <ATen/ops/addcmul.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/rsqrt.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/where.h>

#include "compat/fp8_gemm.h"
#include "models/layers/layers.h"
#include "compat/torch_compat.h"

using namespace studio;

namespace {

double ms_of(const std::function<void()>& fn, const at::Device& device) {
  fn();
  compat::synchronize(device);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) fn();
  compat::synchronize(device);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / 20;
}

}  // namespace

int main() {
  if (compat::list_gpus().empty()) {
    std::fprintf(stderr, "bench-gpu-kernels: no CUDA device\n");
    return 2;
  }
  const at::Device gpu(at::kCUDA, 0);
  bool ok = true;
  std::printf("| matrix [rows, cols] bf16 | values equal to the CPU's | scales equal | kernel ms | ATen passes ms | "
              "fp8 product vs CPU (rel.) |\n|---|---|---|---|---|---|\n");
  for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{35552, 1920}, {35552, 7680}, {2, 3072}, {333, 64}}) {
    at::manual_seed(rows + cols);
    // Rows spanning 1e-6 .. 1e4 in size, and an all-zero row.
    auto x = at::randn({rows, cols}) * at::pow(10.0, at::randint(-6, 5, {rows, 1}).to(at::kFloat));
    x[rows / 2].zero_();
    const auto x_cpu = x.to(at::kBFloat16), x_gpu = x_cpu.to(gpu);
    const auto cpu = compat::quantize_fp8_rows(x_cpu);
    const auto got = compat::quantize_fp8_rows(x_gpu);
    const bool values = at::equal(got.values.cpu().view(at::kByte), cpu.values.view(at::kByte));
    const bool scales = at::equal(got.scales.cpu(), cpu.scales);
    ok = ok && values && scales;
    const double kernel = ms_of([&] { compat::quantize_fp8_rows(x_gpu); }, gpu);
    const double aten = ms_of([&] {
      auto s = at::amax(at::abs(x_gpu), {1}, true).to(at::kFloat) / 448.0;
      s = at::where(s > 0, s, at::ones_like(s));
      at::div(x_gpu, s).clamp_(-448.0, 448.0).to(at::kFloat8_e4m3fn);
    }, gpu);
    // A product with a weight of the same width: the GPU's float8 GEMM against the CPU's from the same bytes.
    const auto w = compat::quantize_fp8_rows((at::randn({256, cols}) / std::sqrt(double(cols))).to(at::kBFloat16));
    const compat::Fp8Weight w_gpu{w.values.to(gpu), w.scales.to(gpu)};
    const auto y_gpu = compat::fp8_linear(x_gpu, w_gpu, {}, at::kBFloat16).cpu().to(at::kFloat);
    const auto y_cpu = compat::fp8_linear(x_cpu.to(at::kFloat), w, {}, at::kFloat);
    const double rel = ((y_gpu - y_cpu).norm() / y_cpu.norm().clamp_min(1e-30)).item<double>();
    ok = ok && rel < 1e-2;
    std::printf("| [%lld, %lld] | %s | %s | %.3f | %.3f | %.2e |\n", (long long)rows, (long long)cols,
                values ? "yes" : "NO", scales ? "yes" : "NO", kernel, aten, rel);
  }
  // The heads' norm and rotation (kernels/head_rows.h) against ATen's ops on the same strided view: the rotation
  // alone must be bit for bit ATen's; after a norm, within one bfloat16 rounding of the largest value.
  std::printf("\n| queries [B, heads, S, d] bf16, as the block makes them | norm | rotated rows | max difference from "
              "ATen / max |y| | ours ms | ATen ms |\n|---|---|---|---|---|---|\n");
  struct HeadCase {
    const char* family;
    int64_t heads, tokens, d, text;
    const char* norm;  // "layer", "rms" or "none"
    bool rotated;      // CogVideoX-2B has no rotary positions
  };
  for (const auto& hc : std::vector<HeadCase>{{"CogVideoX-2B", 30, 17776, 64, 226, "layer", false},
                                              {"CogVideoX-5B", 48, 17776, 64, 226, "layer", true},
                                              {"FLUX.1 1024^2", 24, 4608, 128, 512, "rms", true},
                                              {"Wan2.1-14B 480p", 40, 32760, 128, 0, "none", true}}) {
    at::manual_seed(hc.heads * hc.d + hc.tokens);
    const auto bf16 = at::TensorOptions().device(gpu).dtype(at::kBFloat16);
    // CogVideoX projects q, k and v together ([B, S, 3, heads, d]); the others project q alone ([B, S, heads * d]).
    const auto q = hc.family[0] == 'C' ? at::randn({2, hc.tokens, 3, hc.heads, hc.d}, bf16).select(2, 0).transpose(1, 2)
                                       : at::randn({2, hc.tokens, hc.heads * hc.d}, bf16).unflatten(-1, {hc.heads, hc.d}).transpose(1, 2);
    const auto angles = at::randn({hc.tokens - hc.text, hc.d}, at::TensorOptions().device(gpu)) * 3;
    const models::Rotation rope{hc.rotated ? angles.cos() : at::Tensor(), angles.sin(), hc.text};
    const auto w = (1 + at::randn({hc.d}) / 4).to(gpu, at::kBFloat16), b = (at::randn({hc.d}) / 4).to(gpu, at::kBFloat16);
    const std::string norm = hc.norm;
    models::LayerNorm ln;
    ln.dim = hc.d, ln.eps = 1e-6, ln.weight = w, ln.bias = b;
    const models::RmsNorm rms{w, 1e-6};
    const auto ours = [&] { return norm == "layer" ? ln(q, rope) : norm == "rms" ? rms(q, rope) : models::rotate(q, rope); };
    const auto aten = [&] {
      at::Tensor h = q;
      if (norm == "layer") h = at::layer_norm(q, {hc.d}, w, b, 1e-6);
      if (norm == "rms") {
        const auto f = q.to(at::kFloat);
        h = (f * at::rsqrt(f.pow(2).mean(-1, true) + 1e-6)).to(at::kBFloat16) * w;
      }
      if (!rope.cos.defined()) return h;
      const auto rows = h.narrow(2, hc.text, hc.tokens - hc.text);
      const auto pairs = rows.unflatten(-1, {hc.d / 2, 2});
      const auto turned = at::stack({-pairs.select(-1, 1), pairs.select(-1, 0)}, -1).flatten(-2);
      const auto y = (rows.to(at::kFloat) * rope.cos + turned.to(at::kFloat) * rope.sin).to(at::kBFloat16);
      return hc.text ? at::cat({h.narrow(2, 0, hc.text), y}, 2) : y;
    };
    const auto got = ours(), want = aten();
    const double diff = (got.to(at::kFloat) - want.to(at::kFloat)).abs().max().item<double>();
    const double top = want.to(at::kFloat).abs().max().item<double>();
    const bool close = got.sizes() == want.sizes() &&
                       (norm == "none" ? at::equal(got, want) : diff <= top / 128);
    ok = ok && close;
    std::printf("| %s [2, %lld, %lld, %lld] | %s | %s | %.3g / %.3g%s | %.3f | %.3f |\n", hc.family, (long long)hc.heads,
                (long long)hc.tokens, (long long)hc.d, hc.norm,
                rope.cos.defined() ? ("from " + std::to_string(hc.text)).c_str() : "none", diff, top,
                close ? "" : " (NO)", ms_of([&] { ours(); }, gpu), ms_of([&] { aten(); }, gpu));
  }
  // The adaptive norm (kernels/modulated_norm.h) against ATen's layer_norm and addcmul, written into a joint
  // buffer as CogVideoX's block does: within one bfloat16 rounding of the largest value.
  std::printf("\n| modulated norm, rows [B, S, width] bf16 | max difference from ATen / max |y| | ours ms | ATen ms |\n"
              "|---|---|---|---|\n");
  for (int64_t width : {1920, 3072}) {
    at::manual_seed(width);
    const auto bf16 = at::TensorOptions().device(gpu).dtype(at::kBFloat16);
    const auto x = at::randn({2, 17550, width}, bf16) * 3 + 1;
    const auto m = at::randn({2, 1, 6 * width}, bf16).chunk(6, -1);  // as the block's modulation makes them
    models::LayerNorm ln;
    ln.dim = width, ln.eps = 1e-5;
    ln.weight = (1 + at::randn({width}) / 4).to(gpu, at::kBFloat16), ln.bias = (at::randn({width}) / 4).to(gpu, at::kBFloat16);
    auto joint = at::empty({2, 226 + 17550, width}, bf16);
    auto video = joint.narrow(1, 226, 17550);
    ln.modulate_into(video, x, m[0], m[1]);
    const auto want = at::addcmul(m[0], at::layer_norm(x, {width}, ln.weight, ln.bias, 1e-5), 1 + m[1]);
    const double diff = (video.to(at::kFloat) - want.to(at::kFloat)).abs().max().item<double>();
    const double top = want.to(at::kFloat).abs().max().item<double>();
    const bool close = diff <= top / 128;
    ok = ok && close;
    std::printf("| [2, 17550, %lld] | %.3g / %.3g%s | %.3f | %.3f |\n", (long long)width, diff, top, close ? "" : " (NO)",
                ms_of([&] { ln.modulate_into(video, x, m[0], m[1]); }, gpu),
                ms_of([&] { at::addcmul_out(video, m[0], at::layer_norm(x, {width}, ln.weight, ln.bias, 1e-5), 1 + m[1]); }, gpu));
  }
  // GELU in the GEMM's epilogue (models::Linear::gelu_tanh): in float32 it must be the tanh approximation (far
  // closer to it than to the erf form); in bfloat16, within one rounding of the unfused path; and its time.
  std::printf("\n| feed-forward input, GELU in the epilogue | dtype | max difference from tanh GELU / from erf GELU | "
              "fused ms | GEMM then GELU ms |\n|---|---|---|---|---|\n");
  for (auto dtype : {at::kFloat, at::kBFloat16}) {
    at::manual_seed(7);
    const auto opts = at::TensorOptions().device(gpu).dtype(dtype);
    const int64_t rows = dtype == at::kFloat ? 4096 : 35552, in = 1920, out = 7680;
    models::Linear ff;
    ff.weight = at::randn({out, in}, opts) / std::sqrt(double(in)), ff.bias = at::randn({out}, opts) / 4, ff.dtype = dtype;
    const auto x = at::randn({rows, in}, opts);
    const auto fused = ff.gelu_tanh(x).to(at::kFloat);
    const auto plain = ff(x);
    const double tanh_diff = (fused - at::gelu(plain, "tanh").to(at::kFloat)).abs().max().item<double>();
    const double erf_diff = (fused - at::gelu(plain).to(at::kFloat)).abs().max().item<double>();
    const double top = fused.abs().max().item<double>();
    const bool close = dtype == at::kFloat ? tanh_diff < 1e-4 && tanh_diff < erf_diff / 10 : tanh_diff <= top / 128;
    ok = ok && close;
    std::printf("| [%lld, %lld] x [%lld, %lld]^T | %s | %.3g / %.3g%s | %.3f | %.3f |\n", (long long)rows, (long long)in,
                (long long)out, (long long)in, dtype == at::kFloat ? "float32" : "bfloat16", tanh_diff, erf_diff,
                close ? "" : " (NO)", ms_of([&] { ff.gelu_tanh(x); }, gpu), ms_of([&] { at::gelu(ff(x), "tanh"); }, gpu));
  }
  std::printf("\n%s\n", ok ? "every kernel result equals its reference" : "MISMATCH: see the rows marked NO or above 1e-2");
  return ok ? 0 : 1;
}

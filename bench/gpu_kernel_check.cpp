// The engine's own CUDA kernels against their CPU references, on cuda:0 (bench/gpu-lease.sh runs it; exit
// status 1 on a mismatch). Today: the float8 row quantization of --fp8_gemm (engine/kernels/fp8_quantize.cu)
// must give the bytes and scales the CPU's ATen path gives, on rows of every size class (outliers, zeros,
// tiny values), and its time against the five ATen passes it replaces; then a whole float8 product on the
// GPU (at::_scaled_mm, fast accumulation) against the same product computed on the CPU from the same bytes;
// then the short-row layer norm (engine/kernels/layer_norm.cu, CogVideoX's q and k norms) against ATen's CUDA
// kernel on the strided view the block hands it, within two bfloat16 roundings of the largest value, and the
// two kernels' times.
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
#include <ATen/ops/equal.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/randn.h>
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
  std::printf("\n| q or k view [B, heads, S, d] bf16 | max difference from ATen / max |y| | ours ms | ATen ms (with its copy) |\n"
              "|---|---|---|---|\n");
  for (auto [heads, d] : std::vector<std::pair<int64_t, int64_t>>{{30, 64}, {48, 64}, {24, 128}}) {
    at::manual_seed(heads * d);
    // As the block makes it: q, k and v projected together, [B, S, 3, heads, d], q a strided view.
    const auto qkv = at::randn({2, 17776, 3, heads, d}, at::TensorOptions().device(gpu).dtype(at::kBFloat16));
    const auto q = qkv.select(2, 0).transpose(1, 2);
    models::LayerNorm norm;
    norm.dim = d, norm.eps = 1e-6;
    norm.weight = (1 + at::randn({d}) / 4).to(gpu, at::kBFloat16), norm.bias = (at::randn({d}) / 4).to(gpu, at::kBFloat16);
    const auto ours = norm(q), aten = at::layer_norm(q, {d}, norm.weight, norm.bias, 1e-6);
    const double diff = (ours.to(at::kFloat) - aten.to(at::kFloat)).abs().max().item<double>();
    const double top = aten.to(at::kFloat).abs().max().item<double>();
    const bool close = ours.sizes() == aten.sizes() && diff <= top / 128;  // one bfloat16 rounding of the largest
    ok = ok && close;
    std::printf("| [2, %lld, 17776, %lld] | %.3g / %.3g%s | %.3f | %.3f |\n", (long long)heads, (long long)d, diff, top,
                close ? "" : " (NO)", ms_of([&] { norm(q); }, gpu),
                ms_of([&] { at::layer_norm(q, {d}, norm.weight, norm.bias, 1e-6); }, gpu));
  }
  std::printf("\n%s\n", ok ? "every kernel result equals its reference" : "MISMATCH: see the rows marked NO or above 1e-2");
  return ok ? 0 : 1;
}

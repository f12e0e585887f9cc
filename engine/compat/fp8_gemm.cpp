#include "compat/fp8_gemm.h"

#include <cstdint>
#include <stdexcept>
#include <string>

#include <ATen/TensorOperators.h>
#include <c10/util/Exception.h>
#include <torch/version.h>
#if TORCH_VERSION_MAJOR >= 2
#include <ATen/ops/_scaled_mm.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/clamp.h>
#include <ATen/ops/div.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/where.h>
#endif
#ifdef STUDIO_WITH_CUDA_KERNELS
#include <c10/cuda/CUDAStream.h>

#include "kernels/fp8_quantize.h"
#endif

namespace studio::compat {

#if TORCH_VERSION_MAJOR >= 2

namespace {

constexpr double kE4m3Max = 448.0;

// Rows of `m` [rows, cols] as e4m3fn values and their float32 scales [rows, 1]: one kernel for a 16-bit
// CUDA matrix where the build has ours (engine/kernels), else ATen's passes, which give the same values.
std::pair<at::Tensor, at::Tensor> quantize_rows(const at::Tensor& m) {
#ifdef STUDIO_WITH_CUDA_KERNELS
  const auto x = m.is_cuda() && m.scalar_type() == at::kBFloat16 && m.size(1) % 8 == 0 ? m.contiguous() : at::Tensor();
  if (x.defined() && reinterpret_cast<uintptr_t>(x.data_ptr()) % 16 == 0) {  // rows read 16 bytes at a time
    auto values = at::empty(x.sizes(), x.options().dtype(at::kFloat8_e4m3fn));
    auto scales = at::empty({x.size(0), 1}, x.options().dtype(at::kFloat));
    kernels::quantize_rows_e4m3(x.data_ptr(), x.size(0), x.size(1), values.data_ptr(), scales.data_ptr<float>(),
                                c10::cuda::getCurrentCUDAStream().stream());
    return {values, scales};
  }
#endif
  auto scale = at::amax(at::abs(m), {1}, /*keepdim=*/true).to(at::kFloat) / kE4m3Max;
  scale = at::where(scale > 0, scale, at::ones_like(scale));
  // The quotient is float32 (a 16-bit tensor over a float32 one); clamped for the last ulp of rounding.
  auto values = at::div(m, scale).clamp_(-kE4m3Max, kE4m3Max).to(at::kFloat8_e4m3fn);
  return {values, scale};
}

}  // namespace

bool has_float8_types() { return true; }

Fp8Weight quantize_fp8_rows(const at::Tensor& w) {
  auto [values, scale] = quantize_rows(w);
  return {values.contiguous(), scale.flatten().contiguous()};
}

at::Tensor fp8_linear(const at::Tensor& x, const Fp8Weight& w, const at::Tensor& bias, at::ScalarType dtype) {
  const int64_t in = w.values.size(1), out = w.values.size(0);
  auto sizes = x.sizes().vec();
  sizes.back() = out;
  auto [xq, x_scale] = quantize_rows(x.reshape({-1, in}));
  at::Tensor y;
  if (x.is_cuda()) {  // in bfloat16: pipeline/run_job refuses other dtypes on a GPU
    try {
      y = at::_scaled_mm(xq, w.values.t(), x_scale, w.scales.view({1, out}),
                         bias.defined() ? std::optional<at::Tensor>(bias) : std::nullopt, std::nullopt, dtype,
                         /*use_fast_accum=*/true);
    } catch (const c10::Error& e) {
      const std::string why = e.what_without_backtrace();
      throw std::runtime_error("--fp8_gemm: this GPU cannot multiply in float8 (" + why.substr(0, why.find('\n')) +
                               "); it needs fp8 tensor cores (compute capability 8.9 or later: Ada, Hopper); "
                               "run without --fp8_gemm");
    }
  } else {  // the same rounding, multiplied in the run's dtype
    const auto xd = (xq.to(at::kFloat) * x_scale).to(dtype);
    const auto wd = (w.values.to(at::kFloat) * w.scales.view({out, 1})).to(dtype);
    y = at::linear(xd, wd, bias);
  }
  return y.view(sizes);
}

#else

bool has_float8_types() { return false; }

// Not reached: pipeline/run_job refuses --fp8_gemm where has_float8_types() is false.
Fp8Weight quantize_fp8_rows(const at::Tensor&) { throw std::logic_error("float8 types in LibTorch 1.13"); }

at::Tensor fp8_linear(const at::Tensor&, const Fp8Weight&, const at::Tensor&, at::ScalarType) {
  throw std::logic_error("float8 types in LibTorch 1.13");
}

#endif

}  // namespace studio::compat

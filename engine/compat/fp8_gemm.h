// Linear layers as float8 GEMMs (--fp8_gemm): the weight in float8_e4m3fn with one scale per output channel,
// the input quantized the same way per row at each call, and the product taken by at::_scaled_mm on GPUs with
// fp8 tensor cores (compute capability 8.9+: Ada, Hopper) in bfloat16. Elsewhere (the CPU, another dtype) the
// same rounding is applied and the product computed in the run's dtype, so the error can be checked anywhere;
// it is not faster there. LibTorch 1.13 has no float8 types: callers ask has_float8_types() first.
#pragma once
#include <ATen/core/Tensor.h>

namespace studio::compat {

// Whether this LibTorch has float8 types (LibTorch 1.13 has none).
bool has_float8_types();

struct Fp8Weight {
  at::Tensor values;  // float8_e4m3fn [out, in]
  at::Tensor scales;  // float32 [out]: the weight is values * scales, row by row
  bool defined() const { return values.defined(); }
};

// `w` [out, in] (any float dtype) with each row scaled by max|row| / 448 into e4m3fn (an all-zero row by 1).
Fp8Weight quantize_fp8_rows(const at::Tensor& w);

// x [..., in] W^T + bias, in `dtype` (x's dtype).
at::Tensor fp8_linear(const at::Tensor& x, const Fp8Weight& w, const at::Tensor& bias, at::ScalarType dtype);

}  // namespace studio::compat

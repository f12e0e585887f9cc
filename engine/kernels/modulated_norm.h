// The norm of an adaptive-LayerNorm block in one pass: out = LayerNorm(x) * (1 + scale) + shift, the scale and
// shift per sample (a block's modulation of the timestep), written straight where the caller wants the rows (a
// joint text + video buffer). In ATen it is the norm's pass and a second one over its output (addcmul). Plain
// CUDA C++ (kernels/fp8_quantize.h).
#pragma once
#include <cstdint>

namespace studio::kernels {

struct ModulatedNorm {
  // bfloat16 rows of `dim` values (a multiple of 8, at most 8192), `rows` a sample, `samples` of them; strides in
  // elements, multiples of 8, addresses 16-byte aligned.
  const void* x = nullptr;
  int64_t samples = 0, rows = 0, x_sample_stride = 0, x_row_stride = 0;
  int dim = 0;
  const void* weight = nullptr;  // bfloat16 [dim] each, or null (1 and 0)
  const void* bias = nullptr;
  float eps = 1e-5f;
  // bfloat16 [samples, dim] with a sample stride: 1 + scale (as the caller rounded it) and shift.
  const void* scale1p = nullptr;
  const void* shift = nullptr;
  int64_t scale_stride = 0, shift_stride = 0;
  void* y = nullptr;  // bfloat16, the same shape, its own strides
  int64_t y_sample_stride = 0, y_row_stride = 0;
};

// In float32: n = (x - mean) * rsqrt(var + eps) * weight + bias rounded to bfloat16 (ATen's layer_norm), then
// shift + n * (1 + scale) with the product rounded before the sum (ATen's addcmul), rounded to bfloat16.
void modulated_layer_norm(const ModulatedNorm& in, void* stream);

}  // namespace studio::kernels

// A weight kept in memory as its file stores it (fp8, or one of ggml's block quantizations) and turned into
// the run's dtype only for the call that uses it: a quantized model takes its quantized size in memory, and
// one layer's dense weight at a time. The block layouts are ggml's (ggml-common.h); values are dequantized in
// float32, as ggml and gguf-py do.
#pragma once
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "plan/weight_format.h"

namespace studio::io {

struct PackedWeight {
  plan::WeightFormat format = plan::WeightFormat::F32;
  std::vector<int64_t> shape;  // the weight's, outermost first: [out, in] for a linear layer
  at::Tensor bytes;            // uint8 [shape[0], bytes per row]: rows can be cut and joined as bytes
  float scale = 1.0f;          // scaled fp8: the weight is float32(stored) * scale

  bool defined() const { return bytes.defined(); }
  // The weight in `dtype` on the device the bytes are on.
  at::Tensor dequantize(at::ScalarType dtype) const;
  // Rows [first, first + count), sharing the bytes.
  PackedWeight rows(int64_t first, int64_t count) const;
  PackedWeight to(at::Device device) const;
  uint64_t nbytes() const;
};

// Rows of several weights of one format and scale, in order (a fused layer's parts).
PackedWeight cat_rows(const std::vector<PackedWeight>& parts);

// Values [rows, row_values] float32 of `bytes` uint8 [rows, row bytes] in format `f`.
at::Tensor dequantize_rows(plan::WeightFormat f, const at::Tensor& bytes, int64_t row_values);

// float8_e4m3fn of `x` (float32), rounded to nearest, ties to even, saturating at +-448 (the conversion
// torch's .to(torch.float8_e4m3fn) makes for finite values within range).
uint8_t float_to_e4m3fn(float x);

// A float weight (any dtype, on the CPU) stored as scaled fp8: e4m3fn(w / s) with s = max|w| / 448, on `device`.
PackedWeight quantize_fp8(const at::Tensor& weight, at::Device device);

}  // namespace studio::io

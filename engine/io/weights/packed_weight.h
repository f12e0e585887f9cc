// A weight kept in memory as its file stores it (fp8, or one of ggml's block quantizations) and turned into
// the run's dtype only for the call that uses it: a quantized model takes its quantized size in memory, and
// one layer's dense weight at a time. The block layouts are ggml's (ggml-common.h); values are dequantized in
// float32, as ggml and gguf-py do, a slice of rows at a time into the dense weight (so the float32 temporaries
// stay small whatever the layer's size).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

#include "plan/weight_format.h"

namespace studio::io {

// The memory one model's packed weights are dequantized into for a call, reused from call to call: a model's
// layers run one at a time, so one layer's dense weight is all it ever holds, in one place (a fresh tensor per
// call, of each layer's size, would leave a heap that keeps freed memory, or a GPU's caching allocator, holding
// several). Grown to the largest weight asked for; freed with the last weight that shares it.
class DenseScratch {
 public:
  // `numel` values of `dtype` on `device`, valid until the next call.
  at::Tensor take(int64_t numel, at::ScalarType dtype, at::Device device);

 private:
  at::Tensor buffer_;
};

struct PackedWeight {
  plan::WeightFormat format = plan::WeightFormat::F32;
  std::vector<int64_t> shape;  // the weight's, outermost first: [out, in] for a linear layer
  at::Tensor bytes;            // uint8 [shape[0], bytes per row]: rows can be cut and joined as bytes
  float scale = 1.0f;          // scaled fp8: the weight is float32(stored) * scale
  std::shared_ptr<DenseScratch> scratch;  // shared by a model's weights (WeightSet); none: fresh tensors

  bool defined() const { return bytes.defined(); }
  // The weight in `dtype` on the device the bytes are on, a tensor of its own.
  at::Tensor dequantize(at::ScalarType dtype) const;
  // The same values for one call: in the shared scratch (valid until the next call on any weight sharing it),
  // or a tensor of its own where there is none.
  at::Tensor dequantize_for_call(at::ScalarType dtype) const;
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

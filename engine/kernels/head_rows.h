// The rows of one attention head's queries or keys (64, 128 or 256 values), eight values a lane, read
// in place from a strided view and written to another: an optional norm over the row (LayerNorm, or RMSNorm as
// models::RmsNorm computes it), then optional rotary positions on the rows from a given sequence index on. In
// ATen this is a copy of the strided q or k, the norm (a block a row, mostly idle on rows this short), and for
// the rotation a float copy, a rotated copy, two products, a sum, a rounding and a concatenation with the
// unrotated text rows. Plain CUDA C++ (kernels/fp8_quantize.h).
#pragma once
#include <cstdint>

namespace studio::kernels {

enum class HeadNorm { None, Layer, Rms };

struct HeadRows {
  const void* x = nullptr;  // bfloat16 [n0, n1, n2, dim], dim contiguous, element strides s0, s1, s2
  int64_t n0 = 1, n1 = 1, n2 = 1, s0 = 0, s1 = 0, s2 = 0;
  int dim = 0;  // 64, 128 or 256; every stride a multiple of 8, the address 16-byte aligned
  HeadNorm norm = HeadNorm::None;
  // bfloat16 [dim], either may be null (1 and 0); Rms takes the weight only. In float32: Layer is
  // (x - mean) * rsqrt(var + eps) * weight + bias rounded to bfloat16 once; Rms is x * rsqrt(mean(x^2) + eps)
  // rounded to bfloat16, then times the weight, rounded again.
  const void* weight = nullptr;
  const void* bias = nullptr;
  float eps = 1e-6f;
  // float32 [n2 - rope_from, dim] each, or null: rows i2 >= rope_from, as bfloat16 values y after the norm, become
  // y * cos + rotated(y) * sin in float32 (rotated: pairs (a, b) -> (-b, a)), rounded to bfloat16; each product
  // and the sum rounded as ATen's separate ops round them, so the rotation is bit for bit ATen's.
  const float* cos = nullptr;
  const float* sin = nullptr;
  int64_t rope_from = 0;
};

// y: bfloat16 [n0, n1, n2, dim] with element strides o0, o1, o2 (as x's: dim contiguous, multiples of 8), on `stream`
// (a cudaStream_t).
struct HeadRowsOut {
  void* y = nullptr;
  int64_t o0 = 0, o1 = 0, o2 = 0;
};
void head_rows(const HeadRows& in, const HeadRowsOut& out, void* stream);

}  // namespace studio::kernels

// LayerNorm over short rows (a head's q or k, 64 to 256 values), one warp a row, eight rows a block, read in
// place from a strided view: LibTorch's kernel gives each row a block of its own, mostly idle on rows this
// short, and needs the rows contiguous first (a copy of q or k). Plain CUDA C++ (kernels/fp8_quantize.h).
#pragma once
#include <cstdint>

namespace studio::kernels {

// x: bfloat16 [n0, n1, n2, dim] at `x` with element strides s0, s1, s2 (dim contiguous), dim a multiple of 64
// up to 256, every stride and the address even; y: bfloat16 [n0 * n1 * n2, dim] contiguous. weight and bias:
// bfloat16 [dim], either may be null (1 and 0). In float32: mean, then the variance about it, then
// (x - mean) * rsqrt(var + eps) * weight + bias, rounded to bfloat16 once.
void layer_norm_short_rows(const void* x, int64_t n0, int64_t n1, int64_t n2, int64_t s0, int64_t s1, int64_t s2,
                           int dim, const void* weight, const void* bias, float eps, void* y, void* stream);

}  // namespace studio::kernels

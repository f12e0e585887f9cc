// The engine's own CUDA kernels (engine/kernels/*.cu, compiled by nvcc when the build finds it and LibTorch
// is a CUDA build): plain pointers and a stream, no LibTorch, so that nvcc compiles them quickly. Their
// callers (engine/compat) check shapes and dtypes and keep an ATen path that computes the same values.
#pragma once
#include <cstdint>

namespace studio::kernels {

// Each row of `x` (bfloat16 [rows, cols], rows contiguous, cols a multiple of 8, 16-byte aligned) as
// float8_e4m3fn values e4m3(x / s) and its float32 scale s = max|row| / 448 (1 for an all-zero row), rounded to
// nearest even and saturated at 448: what at::div(x, s).clamp(-448, 448).to(float8_e4m3fn) gives, in one read
// of each row instead of five passes. `stream`: a cudaStream_t.
void quantize_rows_e4m3(const void* x, int64_t rows, int64_t cols, void* values, float* scales, void* stream);

}  // namespace studio::kernels

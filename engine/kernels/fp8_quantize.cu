#include "kernels/fp8_quantize.h"

#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace studio::kernels {

namespace {

constexpr int kThreads = 256;
constexpr float kE4m3Max = 448.0f;

// One block a row; each thread takes 8 values (16 bytes) at a time: the row's largest magnitude by a warp
// then a block reduction, then the row again (from L1/L2) divided by the scale and converted.
__global__ void quantize_rows(const uint4* x, int64_t chunks, uint2* values, float* scales) {
  const int64_t row = blockIdx.x;
  const uint4* in = x + row * chunks;
  float m = 0.0f;
  for (int64_t c = threadIdx.x; c < chunks; c += kThreads) {
    const uint4 v = in[c];
    const auto* h = reinterpret_cast<const __nv_bfloat162*>(&v);
    for (int i = 0; i < 4; ++i) {
      const float2 f = __bfloat1622float2(h[i]);
      m = fmaxf(m, fmaxf(fabsf(f.x), fabsf(f.y)));
    }
  }
  __shared__ float warp_max[kThreads / 32];
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if ((threadIdx.x & 31) == 0) warp_max[threadIdx.x >> 5] = m;
  __syncthreads();
  if (threadIdx.x < 32) {
    m = threadIdx.x < kThreads / 32 ? warp_max[threadIdx.x] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if (threadIdx.x == 0) warp_max[0] = m;
  }
  __syncthreads();
  const float scale = warp_max[0] > 0.0f ? warp_max[0] / kE4m3Max : 1.0f;
  if (threadIdx.x == 0) scales[row] = scale;
  uint2* out = values + row * chunks;
  for (int64_t c = threadIdx.x; c < chunks; c += kThreads) {
    const uint4 v = in[c];
    const auto* h = reinterpret_cast<const __nv_bfloat162*>(&v);
    uint2 packed;
    auto* bytes = reinterpret_cast<__nv_fp8_storage_t*>(&packed);
    for (int i = 0; i < 4; ++i) {
      const float2 f = __bfloat1622float2(h[i]);
      // IEEE division, as ATen's; then round to nearest even, saturating (the clamp).
      bytes[2 * i] = __nv_cvt_float_to_fp8(fminf(fmaxf(__fdiv_rn(f.x, scale), -kE4m3Max), kE4m3Max), __NV_SATFINITE, __NV_E4M3);
      bytes[2 * i + 1] = __nv_cvt_float_to_fp8(fminf(fmaxf(__fdiv_rn(f.y, scale), -kE4m3Max), kE4m3Max), __NV_SATFINITE, __NV_E4M3);
    }
    out[c] = packed;
  }
}

}  // namespace

void quantize_rows_e4m3(const void* x, int64_t rows, int64_t cols, void* values, float* scales, void* stream) {
  if (rows == 0) return;
  quantize_rows<<<static_cast<unsigned>(rows), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const uint4*>(x), cols / 8, static_cast<uint2*>(values), scales);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess)
    throw std::runtime_error(std::string("the float8 quantization kernel did not start: ") + cudaGetErrorString(e));
}

}  // namespace studio::kernels

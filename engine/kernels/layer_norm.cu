#include "kernels/layer_norm.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace studio::kernels {

namespace {

constexpr int kRowsPerBlock = 8;  // a warp each

__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Pairs a lane holds: dim / 64 of them, lane l taking pairs l, l + 32, ... (coalesced reads).
template <int Pairs>
__global__ void layer_norm_rows(const __nv_bfloat16* x, int64_t rows, int64_t n1, int64_t n2, int64_t s0,
                                int64_t s1, int64_t s2, const __nv_bfloat16* weight, const __nv_bfloat16* bias,
                                float eps, __nv_bfloat16* y) {
  const int lane = threadIdx.x & 31;
  const int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5);
  if (row >= rows) return;
  const int64_t i2 = row % n2, i1 = (row / n2) % n1, i0 = row / (n1 * n2);
  const auto* in = reinterpret_cast<const __nv_bfloat162*>(x + i0 * s0 + i1 * s1 + i2 * s2);
  constexpr int dim = Pairs * 64;
  float2 v[Pairs];
  float sum = 0.0f;
  for (int p = 0; p < Pairs; ++p) {
    v[p] = __bfloat1622float2(in[lane + 32 * p]);
    sum += v[p].x + v[p].y;
  }
  const float mean = warp_sum(sum) / dim;
  float sq = 0.0f;
  for (int p = 0; p < Pairs; ++p) {
    const float a = v[p].x - mean, b = v[p].y - mean;
    sq += a * a + b * b;
  }
  const float rstd = rsqrtf(warp_sum(sq) / dim + eps);
  auto* out = reinterpret_cast<__nv_bfloat162*>(y + row * dim);
  const auto* w = reinterpret_cast<const __nv_bfloat162*>(weight);
  const auto* b = reinterpret_cast<const __nv_bfloat162*>(bias);
  for (int p = 0; p < Pairs; ++p) {
    const int i = lane + 32 * p;
    const float2 g = w ? __bfloat1622float2(w[i]) : make_float2(1.0f, 1.0f);
    const float2 h = b ? __bfloat1622float2(b[i]) : make_float2(0.0f, 0.0f);
    out[i] = __floats2bfloat162_rn((v[p].x - mean) * rstd * g.x + h.x, (v[p].y - mean) * rstd * g.y + h.y);
  }
}

}  // namespace

void layer_norm_short_rows(const void* x, int64_t n0, int64_t n1, int64_t n2, int64_t s0, int64_t s1, int64_t s2,
                           int dim, const void* weight, const void* bias, float eps, void* y, void* stream) {
  const int64_t rows = n0 * n1 * n2;
  if (rows == 0) return;
  const unsigned blocks = static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
  const auto* in = static_cast<const __nv_bfloat16*>(x);
  const auto* w = static_cast<const __nv_bfloat16*>(weight);
  const auto* b = static_cast<const __nv_bfloat16*>(bias);
  auto* out = static_cast<__nv_bfloat16*>(y);
  auto s = static_cast<cudaStream_t>(stream);
  switch (dim) {
    case 64: layer_norm_rows<1><<<blocks, 32 * kRowsPerBlock, 0, s>>>(in, rows, n1, n2, s0, s1, s2, w, b, eps, out); break;
    case 128: layer_norm_rows<2><<<blocks, 32 * kRowsPerBlock, 0, s>>>(in, rows, n1, n2, s0, s1, s2, w, b, eps, out); break;
    case 192: layer_norm_rows<3><<<blocks, 32 * kRowsPerBlock, 0, s>>>(in, rows, n1, n2, s0, s1, s2, w, b, eps, out); break;
    case 256: layer_norm_rows<4><<<blocks, 32 * kRowsPerBlock, 0, s>>>(in, rows, n1, n2, s0, s1, s2, w, b, eps, out); break;
    default: throw std::invalid_argument("layer_norm_short_rows: dim " + std::to_string(dim) + " is not 64, 128, 192 or 256");
  }
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess)
    throw std::runtime_error(std::string("the layer norm kernel did not start: ") + cudaGetErrorString(e));
}

}  // namespace studio::kernels

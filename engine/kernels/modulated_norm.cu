#include "kernels/modulated_norm.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace studio::kernels {

namespace {

constexpr int kPerThread = 8;  // bfloat16 values: one 16-byte load

// The sum over the block's threads, returned to every thread. `shared` holds a float a warp.
__device__ float block_sum(float v, float* shared) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, warps = blockDim.x / 32;
  if (threadIdx.x % 32 == 0) shared[warp] = v;
  __syncthreads();
  float total = 0.0f;
  for (int i = 0; i < warps; ++i) total += shared[i];
  __syncthreads();  // `shared` is reused by the next sum
  return total;
}

// A block a row; thread t holds values [8t, 8t + 8). Threads past the row's end hold zeros and write nothing.
__global__ void modulated_layer_norm_kernel(ModulatedNorm in) {
  __shared__ float shared[32];
  const int64_t sample = blockIdx.x / in.rows, r = blockIdx.x % in.rows;
  const int first = threadIdx.x * kPerThread;
  const bool holds = first < in.dim;
  float v[kPerThread] = {};
  if (holds) {
    const uint4 raw = *reinterpret_cast<const uint4*>(static_cast<const __nv_bfloat16*>(in.x) + sample * in.x_sample_stride +
                                                      r * in.x_row_stride + first);
    const auto* h = reinterpret_cast<const __nv_bfloat16*>(&raw);
    for (int i = 0; i < kPerThread; ++i) v[i] = __bfloat162float(h[i]);
  }
  float sum = 0.0f;
  for (int i = 0; i < kPerThread; ++i) sum += v[i];
  const float mean = block_sum(sum, shared) / in.dim;
  float sq = 0.0f;
  for (int i = 0; i < kPerThread; ++i) sq += holds ? (v[i] - mean) * (v[i] - mean) : 0.0f;
  const float rstd = rsqrtf(block_sum(sq, shared) / in.dim + in.eps);
  if (!holds) return;
  const auto* w = static_cast<const __nv_bfloat16*>(in.weight);
  const auto* b = static_cast<const __nv_bfloat16*>(in.bias);
  const auto* scale = static_cast<const __nv_bfloat16*>(in.scale1p) + sample * in.scale_stride;
  const auto* shift = static_cast<const __nv_bfloat16*>(in.shift) + sample * in.shift_stride;
  uint4 out;
  auto* o = reinterpret_cast<__nv_bfloat16*>(&out);
  for (int i = 0; i < kPerThread; ++i) {
    const int c = first + i;
    const float n = __bfloat162float(__float2bfloat16_rn((v[i] - mean) * rstd * (w ? __bfloat162float(w[c]) : 1.0f) +
                                                        (b ? __bfloat162float(b[c]) : 0.0f)));
    o[i] = __float2bfloat16_rn(__fadd_rn(__bfloat162float(shift[c]), __fmul_rn(n, __bfloat162float(scale[c]))));
  }
  *reinterpret_cast<uint4*>(static_cast<__nv_bfloat16*>(in.y) + sample * in.y_sample_stride + r * in.y_row_stride + first) = out;
}

}  // namespace

void modulated_layer_norm(const ModulatedNorm& in, void* stream) {
  if (in.dim % kPerThread != 0 || in.dim > 1024 * kPerThread)
    throw std::invalid_argument("modulated_layer_norm: dim " + std::to_string(in.dim) + " is not a multiple of 8 up to 8192");
  const int64_t blocks = in.samples * in.rows;
  if (blocks == 0) return;
  const int threads = (in.dim / kPerThread + 31) / 32 * 32;
  modulated_layer_norm_kernel<<<static_cast<unsigned>(blocks), threads, 0, static_cast<cudaStream_t>(stream)>>>(in);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess)
    throw std::runtime_error(std::string("the modulated layer norm kernel did not start: ") + cudaGetErrorString(e));
}

}  // namespace studio::kernels

#include "kernels/head_rows.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace studio::kernels {

namespace {

constexpr int kThreads = 256;
constexpr int kPerLane = 8;  // bfloat16 values a lane holds: one 16-byte load, four rotation pairs

// Sum over the `Lanes` lanes of a row (aligned groups of a warp).
template <int Lanes>
__device__ float row_sum(float v) {
  for (int o = Lanes / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ float2 bf16_round(float a, float b) { return __bfloat1622float2(__floats2bfloat162_rn(a, b)); }

// A row of Dim values on Dim / 8 lanes, so that a warp takes 32 / (Dim / 8) rows: a head's 64 to 256 values would
// leave most of a block idle and most of a warp's loads small. A pair (2k, 2k + 1) is also what the rotation
// turns, and a lane holds four whole pairs, so no lane needs another's values for it.
template <int Dim, HeadNorm Norm>
__global__ void head_rows_kernel(HeadRows in, HeadRowsOut o, int64_t rows) {
  constexpr int kLanes = Dim / kPerLane, kPairs = kPerLane / 2;
  const int64_t wanted = (int64_t(blockIdx.x) * kThreads + threadIdx.x) / kLanes;
  const int part = threadIdx.x % kLanes;  // which 8 values of the row
  // Lanes past the last row compute the last row again and write nothing: every lane of the warp stays for the
  // shuffles, whose mask names them all.
  const int64_t row = wanted < rows ? wanted : rows - 1;
  const int64_t i2 = row % in.n2, i1 = (row / in.n2) % in.n1, i0 = row / (in.n1 * in.n2);
  const auto* x = static_cast<const __nv_bfloat16*>(in.x) + i0 * in.s0 + i1 * in.s1 + i2 * in.s2 + part * kPerLane;
  uint4 raw = *reinterpret_cast<const uint4*>(x);
  const auto* h = reinterpret_cast<const __nv_bfloat162*>(&raw);
  float2 v[kPairs];
  for (int p = 0; p < kPairs; ++p) v[p] = __bfloat1622float2(h[p]);
  const auto* w = in.weight ? static_cast<const __nv_bfloat162*>(in.weight) + part * kPairs : nullptr;
  const auto* b = in.bias ? static_cast<const __nv_bfloat162*>(in.bias) + part * kPairs : nullptr;
  if constexpr (Norm == HeadNorm::Layer) {
    float sum = 0.0f;
    for (int p = 0; p < kPairs; ++p) sum += v[p].x + v[p].y;
    const float mean = row_sum<kLanes>(sum) / Dim;
    float sq = 0.0f;
    for (int p = 0; p < kPairs; ++p) {
      const float a = v[p].x - mean, c = v[p].y - mean;
      sq += a * a + c * c;
    }
    const float rstd = rsqrtf(row_sum<kLanes>(sq) / Dim + in.eps);
    for (int p = 0; p < kPairs; ++p) {
      const float2 g = w ? __bfloat1622float2(w[p]) : make_float2(1.0f, 1.0f);
      const float2 c = b ? __bfloat1622float2(b[p]) : make_float2(0.0f, 0.0f);
      v[p] = bf16_round((v[p].x - mean) * rstd * g.x + c.x, (v[p].y - mean) * rstd * g.y + c.y);
    }
  } else if constexpr (Norm == HeadNorm::Rms) {
    float sq = 0.0f;
    for (int p = 0; p < kPairs; ++p) sq += v[p].x * v[p].x + v[p].y * v[p].y;
    const float r = rsqrtf(row_sum<kLanes>(sq) / Dim + in.eps);
    for (int p = 0; p < kPairs; ++p) {
      const float2 g = w ? __bfloat1622float2(w[p]) : make_float2(1.0f, 1.0f);
      const float2 n = bf16_round(v[p].x * r, v[p].y * r);
      v[p] = bf16_round(n.x * g.x, n.y * g.y);
    }
  }
  if (in.cos && i2 >= in.rope_from) {
    const int64_t t = (i2 - in.rope_from) * Dim + part * kPerLane;
    for (int p = 0; p < kPairs; ++p) {
      const float2 c = *reinterpret_cast<const float2*>(in.cos + t + 2 * p);
      const float2 s = *reinterpret_cast<const float2*>(in.sin + t + 2 * p);
      // No fused multiply-add: ATen rounds each product, then the sum.
      v[p] = make_float2(__fadd_rn(__fmul_rn(v[p].x, c.x), __fmul_rn(-v[p].y, s.x)),
                         __fadd_rn(__fmul_rn(v[p].y, c.y), __fmul_rn(v[p].x, s.y)));
    }
  }
  if (wanted >= rows) return;
  auto* out = reinterpret_cast<__nv_bfloat162*>(&raw);
  for (int p = 0; p < kPairs; ++p) out[p] = __floats2bfloat162_rn(v[p].x, v[p].y);
  *reinterpret_cast<uint4*>(static_cast<__nv_bfloat16*>(o.y) + i0 * o.o0 + i1 * o.o1 + i2 * o.o2 + part * kPerLane) = raw;
}

template <int Dim>
void launch(const HeadRows& in, const HeadRowsOut& o, int64_t rows, cudaStream_t s) {
  const int64_t rows_per_block = kThreads / (Dim / kPerLane);
  const unsigned blocks = static_cast<unsigned>((rows + rows_per_block - 1) / rows_per_block);
  switch (in.norm) {
    case HeadNorm::None: head_rows_kernel<Dim, HeadNorm::None><<<blocks, kThreads, 0, s>>>(in, o, rows); break;
    case HeadNorm::Layer: head_rows_kernel<Dim, HeadNorm::Layer><<<blocks, kThreads, 0, s>>>(in, o, rows); break;
    case HeadNorm::Rms: head_rows_kernel<Dim, HeadNorm::Rms><<<blocks, kThreads, 0, s>>>(in, o, rows); break;
  }
}

}  // namespace

void head_rows(const HeadRows& in, const HeadRowsOut& out, void* stream) {
  const int64_t rows = in.n0 * in.n1 * in.n2;
  if (rows == 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  switch (in.dim) {
    case 64: launch<64>(in, out, rows, s); break;
    case 128: launch<128>(in, out, rows, s); break;
    case 256: launch<256>(in, out, rows, s); break;
    default: throw std::invalid_argument("head_rows: dim " + std::to_string(in.dim) + " is not 64, 128 or 256");
  }
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess)
    throw std::runtime_error(std::string("the head rows kernel did not start: ") + cudaGetErrorString(e));
}

}  // namespace studio::kernels

#include "models/layers/positions.h"

#include <cmath>

#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/cos.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/sin.h>

namespace studio::models {

at::Tensor timestep_embedding(const at::Tensor& timesteps, int64_t dim, bool flip_sin_to_cos, double shift) {
  const int64_t half = dim / 2;
  auto exponent = at::arange(half, timesteps.options().dtype(at::kFloat)) * (-std::log(10000.0)) / (double(half) - shift);
  auto emb = timesteps.to(at::kFloat).reshape({-1, 1}) * at::exp(exponent).view({1, half});
  emb = flip_sin_to_cos ? at::cat({at::cos(emb), at::sin(emb)}, -1) : at::cat({at::sin(emb), at::cos(emb)}, -1);
  return emb;  // CogVideoX's dim (inner_dim) is even
}

std::pair<at::Tensor, at::Tensor> axial_rope(int64_t frames, int64_t rows, int64_t cols, const std::vector<int>& dims,
                                             double theta, at::ScalarType angle_dtype) {
  const auto opts = at::TensorOptions(angle_dtype);
  const at::Tensor positions[3] = {at::arange(frames, opts).repeat_interleave(rows * cols),
                                   at::arange(rows, opts).repeat_interleave(cols).repeat({frames}),
                                   at::arange(cols, opts).repeat({frames * rows})};
  std::vector<at::Tensor> cos, sin;
  for (size_t a = 0; a < 3; ++a) {
    const int64_t d = dims[a];
    const auto freqs = 1.0 / at::pow(theta, at::arange(0, d, 2, opts) / double(d));
    const auto angles = positions[a].view({-1, 1}) * freqs.view({1, -1});
    cos.push_back(angles.cos().repeat_interleave(2, 1));
    sin.push_back(angles.sin().repeat_interleave(2, 1));
  }
  return {at::cat(cos, 1).to(at::kFloat), at::cat(sin, 1).to(at::kFloat)};
}

}  // namespace studio::models

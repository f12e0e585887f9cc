#include "models/layers/positions.h"

#include <cmath>

#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/cos.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/sin.h>

namespace studio::models {

at::Tensor timestep_embedding(const at::Tensor& timesteps, int64_t dim, bool flip_sin_to_cos, double shift) {
  const int64_t half = dim / 2;
  auto exponent = at::arange(half, timesteps.options().dtype(at::kFloat)) * (-std::log(10000.0)) / (double(half) - shift);
  auto emb = timesteps.to(at::kFloat).reshape({-1, 1}) * at::exp(exponent).view({1, half});
  emb = flip_sin_to_cos ? at::cat({at::cos(emb), at::sin(emb)}, -1) : at::cat({at::sin(emb), at::cos(emb)}, -1);
  return emb;  // CogVideoX's dim (inner_dim) is even
}

}  // namespace studio::models

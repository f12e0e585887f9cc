// The timestep's sinusoidal embedding every family's DiT starts its conditioning from.
#pragma once
#include <cstdint>

#include <ATen/core/Tensor.h>

namespace studio::models {

// Sinusoidal timestep embedding [B, dim] (diffusers' get_timestep_embedding).
at::Tensor timestep_embedding(const at::Tensor& timesteps, int64_t dim, bool flip_sin_to_cos, double shift);

}  // namespace studio::models

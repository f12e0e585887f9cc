// The timestep's sinusoidal embedding every family's DiT starts its conditioning from, and the axial
// rotary tables of a token grid.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace studio::models {

// Sinusoidal timestep embedding [B, dim] (diffusers' get_timestep_embedding).
at::Tensor timestep_embedding(const at::Tensor& timesteps, int64_t dim, bool flip_sin_to_cos, double shift);

// Rotary tables (cos, sin) of a grid of frames x rows x columns tokens, token n = (frame, row, column):
// per axis of width dims[a], angles position * theta^(-2k / dims[a]) computed in `angle_dtype` (diffusers'
// get_1d_rotary_pos_embed: float64 for FLUX.1, float32 for HunyuanVideo), each repeated for its interleaved
// pair, the three axes side by side: [tokens, sum of dims] each, float32.
std::pair<at::Tensor, at::Tensor> axial_rope(int64_t frames, int64_t rows, int64_t cols, const std::vector<int>& dims,
                                             double theta, at::ScalarType angle_dtype);

}  // namespace studio::models

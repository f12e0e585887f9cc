// Position tables of CogVideoX, as the reference pipeline builds them for a latent grid.
#pragma once
#include <ATen/core/Tensor.h>

#include "models/dit_model.h"
#include "plan/families/cogvideox_config.h"

namespace studio::models {

// 3D sin-cos table [tokens, inner_dim] (CogVideoX-2B): a quarter temporal, three quarters spatial
// (columns, then rows), each [sin | cos]; computed in float64 as the reference does, returned float32.
at::Tensor sincos_3d(const plan::CogVideoXTransformerConfig& cfg, const TokenGrid& grid);

// 3D RoPE tables cos, sin [tokens, head_dim]: head_dim split 1/4 temporal, 3/8 rows, 3/8 columns, each
// frequency repeated for an interleaved pair. CogVideoX 1.0 uses the 'linspace' grid over the crop of
// the base size (sample size / patch); 1.5 the 'slice' grid of integer positions.
struct Rope {
  at::Tensor cos, sin;
};
Rope rope_3d(const plan::CogVideoXTransformerConfig& cfg, const TokenGrid& grid);
}  // namespace studio::models

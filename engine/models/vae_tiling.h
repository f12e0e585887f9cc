// Tiled decoding in one process, as diffusers' AutoencoderKLCogVideoX.enable_tiling() does it (v0.32.2):
// overlapping tiles of the latents, each decoded whole (frame batches with their own causal caches),
// each blended linearly into the tile above and the tile to the left over the overlap, then cropped.
// Memory follows the tile size, not the video's; the result differs from an untiled decode near the
// seams (docs/performance.md measures by how much).
#pragma once
#include <ATen/core/Tensor.h>

#include "models/cogvideox_vae.h"

namespace studio::models {

// z [B, C, F, h, w] -> video [B, out_channels, frames, H, W] float32. Latents that fit in one tile are
// decoded untiled, as diffusers does.
at::Tensor decode_tiled(const CogVideoXVae& vae, const at::Tensor& z, const TileOptions& tiles = {});

}  // namespace studio::models

// Tiled decoding and encoding in one process, as diffusers' enable_tiling() does it (v0.32.2: AutoencoderKLCogVideoX,
// AutoencoderKL; 0.35.2: AutoencoderKLWan):
// overlapping tiles of the latents, each decoded whole (frame batches with their own causal caches),
// each blended linearly into the tile above and the tile to the left over the overlap, then cropped.
// Memory follows the tile size, not the video's; the result differs from an untiled decode near the
// seams (docs/performance.md measures by how much).
#pragma once
#include <functional>

#include <ATen/core/Tensor.h>

#include "models/vae_decoder.h"

namespace studio::models {

// The share of a tile that overlaps its neighbour, down and across.
struct TileOverlap {
  double height = 0.25, width = 0.25;
};

// Overlapping tiles over the last two axes of z (rows, columns), each decoded whole by `decode`, blended
// linearly into the tile above and the tile to the left, then cropped: diffusers' tiled_decode, shared by
// the VAEs (`spatial_compression`: output pixels per latent pixel). Latents that fit in one tile are
// decoded untiled, as diffusers does. `progress` hears each tile decoded.
at::Tensor decode_in_tiles(const at::Tensor& z, int64_t spatial_compression, const TileOptions& tiles,
                           const TileOverlap& overlap, const std::function<at::Tensor(const at::Tensor&)>& decode,
                           const DecodeProgress& progress = {});

// The same the other way, diffusers' tiled_encode: tiles of tiles.sample_height x sample_width pixels of x, each
// encoded whole by `encode` (latents `spatial_compression` times smaller), starting every (1 - overlap) of a
// tile, blended over the overlap's share of a tile's latents, cropped to x's latent size. `whole`: the
// reference's rule found x fits one tile, so it is encoded untiled.
at::Tensor encode_in_tiles(const at::Tensor& x, int64_t spatial_compression, const TileOptions& tiles,
                           const TileOverlap& overlap, const std::function<at::Tensor(const at::Tensor&)>& encode,
                           bool whole, const DecodeProgress& progress = {});

}  // namespace studio::models

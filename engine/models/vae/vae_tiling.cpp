#include "models/vae/vae_tiling.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include <c10/core/InferenceMode.h>

#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>

namespace studio::models {

namespace {

// b's first rows (dim 3) or columns (dim 4) become a linear mix from a's last ones to b's own, in place,
// as diffusers' blend_v / blend_h.
void blend(const at::Tensor& a, at::Tensor& b, int64_t dim, int64_t extent) {
  extent = std::min({a.size(dim), b.size(dim), extent});
  if (extent <= 0) return;
  std::vector<int64_t> shape(size_t(b.dim()), 1);
  shape[size_t(dim)] = extent;
  const auto w = (at::arange(extent, b.options().dtype(at::kDouble)) / double(extent)).to(b.scalar_type()).view(shape);
  auto head = b.narrow(dim, 0, extent);
  head.copy_(a.narrow(dim, a.size(dim) - extent, extent) * (1 - w) + head * w);
}

// One tiled pass: the input's tiles (rows and columns each, and between their starts), and of each tile's
// output the rows and columns blended into the next tile and those kept, then the output's size.
struct TileGeometry {
  int64_t tile_h = 0, tile_w = 0, stride_h = 1, stride_w = 1;
  int64_t blend_h = 0, blend_w = 0, keep_h = 0, keep_w = 0, out_h = 0, out_w = 0;
};

// Overlapping tiles over the last two axes of x, each through `fn`, blended into the tile above and the tile to
// the left, the top-left part of each kept, then cropped: the loop diffusers' tiled_encode and tiled_decode share.
at::Tensor in_tiles(const at::Tensor& x, const TileGeometry& g, const std::function<at::Tensor(const at::Tensor&)>& fn,
                    const DecodeProgress& progress) {
  c10::InferenceMode guard;  // the tiles may be inference tensors, blended in place below
  const int64_t xr = x.dim() - 2, xc = x.dim() - 1;  // rows and columns of the input
  const int64_t h = x.size(xr), w = x.size(xc);
  std::vector<std::vector<at::Tensor>> tiles;
  const int total = int(((h + g.stride_h - 1) / g.stride_h) * ((w + g.stride_w - 1) / g.stride_w));
  for (int64_t i = 0; i < h; i += g.stride_h) {
    tiles.emplace_back();
    for (int64_t j = 0; j < w; j += g.stride_w) {
      tiles.back().push_back(fn(x.narrow(xr, i, std::min(g.tile_h, h - i)).narrow(xc, j, std::min(g.tile_w, w - j))));
      if (progress) progress(int(tiles.size() - 1) * int(tiles[0].size()) + int(tiles.back().size()), total);
    }
  }
  const int64_t r = tiles[0][0].dim() - 2, c = tiles[0][0].dim() - 1;  // rows and columns of the output
  // In order, in place: a tile blends with neighbours that have already been blended themselves.
  std::vector<at::Tensor> rows;
  for (size_t i = 0; i < tiles.size(); ++i) {
    std::vector<at::Tensor> row;
    for (size_t j = 0; j < tiles[i].size(); ++j) {
      at::Tensor& tile = tiles[i][j];
      if (i > 0) blend(tiles[i - 1][j], tile, r, g.blend_h);
      if (j > 0) blend(tiles[i][j - 1], tile, c, g.blend_w);
      row.push_back(tile.narrow(r, 0, std::min(g.keep_h, tile.size(r))).narrow(c, 0, std::min(g.keep_w, tile.size(c))));
    }
    rows.push_back(at::cat(row, c));
  }
  // With tile sizes that do not divide the picture evenly the rows and columns kept can overrun it;
  // later diffusers releases crop to the picture, and so do we (480 x 720 never overruns).
  auto out = at::cat(rows, r);
  return out.narrow(r, 0, std::min(out.size(r), g.out_h)).narrow(c, 0, std::min(out.size(c), g.out_w)).contiguous();
}

}  // namespace

at::Tensor decode_in_tiles(const at::Tensor& z, int64_t s, const TileOptions& t, const TileOverlap& overlap,
                           const std::function<at::Tensor(const at::Tensor&)>& decode,
                           const DecodeProgress& progress) {
  if (t.sample_height < s || t.sample_width < s)
    throw std::invalid_argument("decode_in_tiles: tiles of " + std::to_string(t.sample_height) + " x " +
                                std::to_string(t.sample_width) + " pixels hold no latent pixel");
  const int64_t tile_h = t.sample_height / s, tile_w = t.sample_width / s;
  const int64_t h = z.size(z.dim() - 2), w = z.size(z.dim() - 1);
  if (h <= tile_h && w <= tile_w) {
    c10::InferenceMode guard;
    auto whole = decode(z);
    if (progress) progress(1, 1);
    return whole;
  }
  TileGeometry g;
  g.tile_h = tile_h, g.tile_w = tile_w;
  g.stride_h = std::max<int64_t>(int64_t(double(tile_h) * (1 - overlap.height)), 1);
  g.stride_w = std::max<int64_t>(int64_t(double(tile_w) * (1 - overlap.width)), 1);
  g.blend_h = int64_t(t.sample_height * overlap.height), g.blend_w = int64_t(t.sample_width * overlap.width);
  g.keep_h = t.sample_height - g.blend_h, g.keep_w = t.sample_width - g.blend_w;
  g.out_h = h * s, g.out_w = w * s;
  return in_tiles(z, g, decode, progress);
}

at::Tensor encode_in_tiles(const at::Tensor& x, int64_t s, const TileOptions& t, const TileOverlap& overlap,
                           const std::function<at::Tensor(const at::Tensor&)>& encode, bool whole,
                           const DecodeProgress& progress) {
  if (t.sample_height < s || t.sample_width < s)
    throw std::invalid_argument("encode_in_tiles: tiles of " + std::to_string(t.sample_height) + " x " +
                                std::to_string(t.sample_width) + " pixels make no latent pixel");
  if (whole) {
    c10::InferenceMode guard;
    auto out = encode(x);
    if (progress) progress(1, 1);
    return out;
  }
  TileGeometry g;
  g.tile_h = t.sample_height, g.tile_w = t.sample_width;
  g.stride_h = std::max<int64_t>(int64_t(double(t.sample_height) * (1 - overlap.height)), 1);
  g.stride_w = std::max<int64_t>(int64_t(double(t.sample_width) * (1 - overlap.width)), 1);
  const int64_t latent_h = t.sample_height / s, latent_w = t.sample_width / s;
  g.blend_h = int64_t(double(latent_h) * overlap.height), g.blend_w = int64_t(double(latent_w) * overlap.width);
  g.keep_h = latent_h - g.blend_h, g.keep_w = latent_w - g.blend_w;
  g.out_h = x.size(x.dim() - 2) / s, g.out_w = x.size(x.dim() - 1) / s;
  return in_tiles(x, g, encode, progress);
}

}  // namespace studio::models

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

}  // namespace

at::Tensor decode_in_tiles(const at::Tensor& z, int64_t s, const TileOptions& t, const TileOverlap& overlap,
                           const std::function<at::Tensor(const at::Tensor&)>& decode,
                           const DecodeProgress& progress) {
  if (t.sample_height < s || t.sample_width < s)
    throw std::invalid_argument("decode_in_tiles: tiles of " + std::to_string(t.sample_height) + " x " +
                                std::to_string(t.sample_width) + " pixels hold no latent pixel");
  c10::InferenceMode guard;  // the tiles may be inference tensors, blended in place below
  const int64_t zr = z.dim() - 2, zc = z.dim() - 1;  // rows and columns of the latents
  const int64_t tile_h = t.sample_height / s, tile_w = t.sample_width / s;
  const int64_t h = z.size(zr), w = z.size(zc);
  if (h <= tile_h && w <= tile_w) {
    auto whole = decode(z);
    if (progress) progress(1, 1);
    return whole;
  }
  const int64_t stride_h = std::max<int64_t>(int64_t(double(tile_h) * (1 - overlap.height)), 1);
  const int64_t stride_w = std::max<int64_t>(int64_t(double(tile_w) * (1 - overlap.width)), 1);
  const int64_t blend_h = int64_t(t.sample_height * overlap.height), blend_w = int64_t(t.sample_width * overlap.width);
  const int64_t keep_h = t.sample_height - blend_h, keep_w = t.sample_width - blend_w;

  std::vector<std::vector<at::Tensor>> tiles;
  const int total = int(((h + stride_h - 1) / stride_h) * ((w + stride_w - 1) / stride_w));
  for (int64_t i = 0; i < h; i += stride_h) {
    tiles.emplace_back();
    for (int64_t j = 0; j < w; j += stride_w) {
      tiles.back().push_back(decode(z.narrow(zr, i, std::min(tile_h, h - i)).narrow(zc, j, std::min(tile_w, w - j))));
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
      if (i > 0) blend(tiles[i - 1][j], tile, r, blend_h);
      if (j > 0) blend(tiles[i][j - 1], tile, c, blend_w);
      row.push_back(tile.narrow(r, 0, std::min(keep_h, tile.size(r))).narrow(c, 0, std::min(keep_w, tile.size(c))));
    }
    rows.push_back(at::cat(row, c));
  }
  // With tile sizes that do not divide the picture evenly the rows and columns kept can overrun it;
  // later diffusers releases crop to the picture, and so do we (480 x 720 never overruns).
  auto out = at::cat(rows, r);
  return out.narrow(r, 0, std::min(out.size(r), h * s)).narrow(c, 0, std::min(out.size(c), w * s)).contiguous();
}

}  // namespace studio::models

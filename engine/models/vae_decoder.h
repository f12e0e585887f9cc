// The seam for a family's VAE decoder: pipeline/ and parallel/ decode through it, never a family's type.
// Decoded output is always video-shaped, [B, out_channels, frames, H, W] float32 (an image is one frame).
#pragma once
#include <functional>
#include <utility>

#include <ATen/core/Tensor.h>

namespace studio::models {

// How several ranks decode one picture, split by rows (parallel/parallel_vae.* provides one over c10d).
// Every rank makes the same calls in the same order.
class RowExchange {
 public:
  virtual ~RowExchange() = default;
  // Sends `first` (this rank's first row) to the rank above and `last` to the rank below; returns the
  // row received from above and from below, zeros where this rank is at the picture's edge.
  virtual std::pair<at::Tensor, at::Tensor> halo(const at::Tensor& first, const at::Tensor& last) = 0;
  // The elementwise sum of a small tensor over the ranks.
  virtual at::Tensor sum(const at::Tensor& t) = 0;
  // Every rank's `t` joined along `dim`, in rank order; the ranks' sizes along `dim` may differ (an
  // attention over the whole picture needs every rank's keys and values).
  virtual at::Tensor gather(const at::Tensor& t, int64_t dim) = 0;
  // Whether this rank holds the picture's first rows, its last: where a convolution that replicates the
  // edge (rather than padding with zeros) repeats its own row instead of a neighbour's.
  virtual bool at_top() const = 0;
  virtual bool at_bottom() const = 0;
};

// Latent rows [begin, end) of rank r of n for a picture of h latent rows: the first h % n ranks take one more.
std::pair<int64_t, int64_t> rows_of(int64_t h, int r, int n);

// One rank's share of a picture encoded by rows (parallel VAE encoding): its rows are rows_of(latent rows,
// rank, ranks) times the VAE's spatial compression, and `exchange` reaches the other ranks.
struct RowShare {
  RowExchange* exchange = nullptr;
  int rank = 0, ranks = 1;
};
// This rank's share of `pixels`, whose rows are along `dim`: whole latent rows (so every halving of an encoder
// keeps a rank's rows even) of a VAE compressing `spatial`x. An InputError when there are more ranks than rows.
at::Tensor rows_of_share(const at::Tensor& pixels, int64_t dim, int64_t spatial, const RowShare& share);

// The mean and (biased) variance of each group of `x` [B, G, ...], in float32, [B, G, 1] each. With `rows`,
// of the whole picture the ranks' rows make: every rank's count, sum and sum of squares (in float64, from
// its own mean and variance) summed, so a group norm split by rows equals the one-process one.
std::pair<at::Tensor, at::Tensor> group_mean_var(const at::Tensor& x, RowExchange* rows);

// The tiles of a tiled decode, in output pixels (the plan gives each family's default); how much they
// overlap is the VAE's own rule, as in diffusers' enable_tiling().
struct TileOptions {
  int sample_height = 0, sample_width = 0;
};

// How far one decode has got: `done` of the `total` parts it goes through (its tiles, its batches of
// frames, or the decoder's levels where the whole video is one pass), so that a decode of several seconds
// shows progress. Empty: nobody is told.
using DecodeProgress = std::function<void(int done, int total)>;

// A one-pass decoder's levels as its progress: the middle block, each up block, the output; tell() after each.
struct DecoderLevels {
  const DecodeProgress& progress;
  int total, done = 0;
  void tell() {
    if (progress) progress(++done, total);
  }
};

class VaeDecoder {
 public:
  virtual ~VaeDecoder() = default;

  // The transformer's final latents -> the decoder's input z [B, C, f, h, w]: the family's layout, its
  // padding frames (`pad_frames`, at the front) dropped, its scaling undone.
  virtual at::Tensor prepare(const at::Tensor& final_latents, int pad_frames) const = 0;
  virtual int output_frames(int latent_frames) const = 0;
  virtual int spatial_compression() const = 0;  // output pixels per latent pixel

  // z -> the decoded output, handed to `on_batch` one batch of frames at a time as it is decoded (on the
  // model's device). With `rows`, z is this rank's rows (dim 3) of the latents and so is every batch.
  virtual void decode_batches(const at::Tensor& z, const std::function<void(const at::Tensor&)>& on_batch,
                              RowExchange* rows = nullptr, const DecodeProgress& progress = {}) const = 0;
  // The same in overlapping tiles, whole: memory follows the tile, not the picture. `progress` counts tiles.
  virtual at::Tensor decode_tiled(const at::Tensor& z, const TileOptions& tiles,
                                  const DecodeProgress& progress = {}) const = 0;
};

}  // namespace studio::models

// The encoder of CogVideoX's causal 3D VAE (CogVideoXEncoder3D, diffusers 0.35.2) for what the image-to-video
// pipelines give it: one picture, a video of one frame. On one frame every causal convolution sees that
// frame repeated (its past is the first frame), and halving time leaves a lone first frame as it is, so
// nothing is carried between frame batches. A video of several frames is not encoded here. Whole, in tiles,
// or split by rows over the ranks (--use_parallel_vae).
#pragma once
#include <memory>
#include <string>

#include <ATen/core/Tensor.h>

#include "io/weights/weights.h"
#include "models/vae_decoder.h"
#include "plan/families/cogvideox_config.h"

namespace studio::models {

class CogVideoXPictureEncoder {
 public:
  // The encoder.* weights of vae/; InputError when the folder holds none.
  static std::shared_ptr<CogVideoXPictureEncoder> load(const std::string& part_dir, const plan::CogVideoXVaeConfig& cfg,
                                                       at::ScalarType dtype, at::Device device);
  // A picture [B, 3, H, W] in [-1, 1] -> the moments of its latent distribution [B, 2 latent_channels, 1, h, w]
  // (mean, then log-variance), float32. With `rows`, this rank encodes its share of the rows (its convolutions
  // take a halo row from each neighbour, its group norms the whole picture's statistics) and the shares are
  // gathered: exact.
  at::Tensor moments(const at::Tensor& picture, const RowShare* rows = nullptr) const;
  // The same in overlapping tiles, as diffusers' tiled_encode with enable_tiling() (a sixth of a tile overlaps
  // down, a fifth across): memory follows the tile. `progress` counts tiles.
  at::Tensor moments_tiled(const at::Tensor& picture, const TileOptions& tiles, const DecodeProgress& progress = {}) const;

  struct Layers;  // in the .cpp

 private:
  plan::CogVideoXVaeConfig cfg_;
  at::ScalarType dtype_ = at::kFloat;
  at::Device device_ = at::kCPU;
  std::shared_ptr<const Layers> layers_;
};

// DiagonalGaussianDistribution.sample: mean + exp(0.5 * clamp(logvar, -30, 20)) * noise, from the moments.
at::Tensor sample_latents(const at::Tensor& moments, const at::Tensor& noise);

}  // namespace studio::models

// Wan's causal 3D VAE (AutoencoderKLWan, diffusers 0.35.2; Wan2.1 and Wan2.2 A14B). The decoder: latents
// are decoded one latent frame at a time, the first giving one frame and each next one
// temporal_compression() frames, and every causal convolution carries the last two frames of its input
// from one latent frame to the next. Norms are RMS norms over the channels of each pixel and the mid
// block's attention runs within each frame.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include <ATen/core/Tensor.h>

#include "models/layers/layers.h"
#include "models/vae_decoder.h"
#include "plan/families/wan_vae_config.h"

namespace studio::models {

namespace wan {
struct DecodeState;
}

class WanVae final : public VaeDecoder {
 public:
  // The decoder, and the encoder too with `with_encoder` (when the folder holds its weights).
  static std::shared_ptr<WanVae> load(const std::string& part_dir, const plan::WanVaeConfig& cfg, at::ScalarType dtype,
                                      at::Device device, bool with_encoder = false);
  static std::shared_ptr<WanVae> load(io::WeightSet& weights, const plan::WanVaeConfig& cfg, at::ScalarType dtype,
                                      at::Device device, bool with_encoder = false);

  const plan::WanVaeConfig& config() const { return cfg_; }
  // Latents [B, C, F, h, w] (Wan's layout) -> z [B, C, F - pad_frames, h, w], de-normalised per channel:
  // latents * latents_std + latents_mean, as WanPipeline computes it (latents / (1 / std) + mean).
  at::Tensor prepare(const at::Tensor& final_latents, int pad_frames) const override;
  int output_frames(int latent_frames) const override;
  int spatial_compression() const override { return cfg_.spatial_compression(); }
  // One batch per latent frame: the first frame, then temporal_compression() frames at a time, each
  // clamped to [-1, 1]. With `rows`, exact: convolutions take a halo row from each neighbour, RMS norms
  // are per pixel, the attention sees every rank's keys and values.
  void decode_batches(const at::Tensor& z, const std::function<void(const at::Tensor&)>& on_batch,
                      RowExchange* rows = nullptr, const DecodeProgress& progress = {}) const override;
  // diffusers' tiled_decode: tiles of tiles.sample_height x sample_width pixels starting every three
  // quarters of a tile (Wan's 256 / 192), blended over the quarter they overlap; as in diffusers 0.35.2,
  // not clamped (a tile's edge can overshoot [-1, 1]: the video writer clamps). The Wan2.2 VAE's as diffusers
  // 0.42.1 tiles it (0.35.2 fails on its patches): the tiles blended in patches, then unfolded and clamped.
  at::Tensor decode_tiled(const at::Tensor& z, const TileOptions& tiles,
                          const DecodeProgress& progress = {}) const override;
  // decode_batches() collected into one tensor.
  at::Tensor decode(const at::Tensor& z) const;

  // A video [B, in_channels, 1 + 4k, H, W] in [-1, 1] -> the moments of its latent distribution
  // [B, 2 z_dim, 1 + k, H / 8, W / 8] (mean, then log-variance), float32. InputError when vae/ has no encoder.
  // With `rows`, this rank encodes its share of the rows (its convolutions take a halo row from each
  // neighbour, its attention every rank's keys and values) and the shares are gathered: exact.
  at::Tensor encode(const at::Tensor& video, const RowShare* rows = nullptr) const;
  // The same in overlapping tiles, as diffusers' tiled_encode (0.35.2; the Wan2.2 VAE's as 0.42.1, in tiles
  // of tiles.sample_height x sample_width patches): memory follows the tile. `progress` counts tiles.
  at::Tensor encode_tiled(const at::Tensor& video, const TileOptions& tiles, const DecodeProgress& progress = {}) const;
  // A mean [B, z_dim, ...] normalised as WanImageToVideoPipeline does: (mean - latents_mean) * (1 / latents_std).
  at::Tensor normalize(const at::Tensor& mean) const;

  struct Decoder;  // the layers, in wan_vae_blocks.h
  struct Encoder;

 private:
  // The batches as decode_batches() hands them out, unclamped when `clamp` is false.
  // Without `unfold`, the Wan2.2 VAE's output stays in patches (what its tiles blend in).
  void decode_frames(const at::Tensor& z, const std::function<void(const at::Tensor&)>& on_batch, RowExchange* rows,
                     bool clamp, const DecodeProgress& progress = {}, bool unfold = true) const;
  void check_encoder_input(const at::Tensor& video) const;
  // Video already folded into patches, through the encoder a chunk of frames at a time with `state`'s caches.
  at::Tensor encode_patches(const at::Tensor& video, wan::DecodeState& state) const;

  plan::WanVaeConfig cfg_;
  at::ScalarType dtype_ = at::kFloat;
  at::Device device_ = at::kCPU;
  std::shared_ptr<const Decoder> decoder_;
  std::shared_ptr<const Encoder> encoder_;  // null when the folder has no encoder weights
};

}  // namespace studio::models

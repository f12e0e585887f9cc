// HunyuanVideo-1.5's causal 3D VAE (AutoencoderKLHunyuanVideo15 of diffusers v0.42.1): 16x in pixels and 4x
// in frames. Every 3x3x3 convolution is causal (replicate padding, two frames in front); norms are RMS norms
// over the channels of each pixel; in each mid block's attention a frame sees itself and the earlier ones. Each
// decoder upsampler spreads channels over pixels (and frames, the first frame excepted), plus a shortcut of
// its input spread the same way; each encoder downsampler is its inverse, its shortcut averaging channels.
// The whole video is decoded (encoded) at once, as the reference does, or in tiles as its tiling does.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <ATen/core/Tensor.h>

#include "io/weights/weights.h"
#include "models/layers/layers.h"
#include "models/vae_decoder.h"
#include "plan/families/hunyuan15_config.h"

namespace studio::models {

class Hunyuan15Vae final : public VaeDecoder {
 public:
  // The decoder, and the encoder with `with_encoder` (an InputError naming the folder when it has none).
  static std::shared_ptr<Hunyuan15Vae> load(io::WeightSet& weights, const plan::Hunyuan15VaeConfig& cfg,
                                            at::ScalarType dtype, at::Device device, bool with_encoder = false);

  // Latents [B, C, F, h, w] -> z: the padding frames dropped, divided by scaling_factor.
  at::Tensor prepare(const at::Tensor& final_latents, int pad_frames) const override;
  int output_frames(int latent_frames) const override;
  int spatial_compression() const override { return cfg_.spatial_compression_ratio; }
  // One batch: the whole video, unclamped (the writers clamp). With `rows`, z is this rank's rows and so is the
  // video: convolutions take a halo row from each neighbour (their own edge row at the picture's edge, as the
  // replicate padding does), RMS norms are per pixel, the mid attention sees every rank's keys and values.
  void decode_batches(const at::Tensor& z, const std::function<void(const at::Tensor&)>& on_batch,
                      RowExchange* rows = nullptr, const DecodeProgress& progress = {}) const override;
  // Tiles of tiles.sample_height x sample_width pixels (every frame) overlapping by a quarter, as diffusers'
  // tiled_decode; memory follows the tile.
  at::Tensor decode_tiled(const at::Tensor& z, const TileOptions& tiles,
                          const DecodeProgress& progress = {}) const override;
  // `progress` counts the decoder's levels: the middle block, each up block, the output.
  at::Tensor decode(const at::Tensor& z, const DecodeProgress& progress = {}, RowExchange* rows = nullptr) const;
  // A video [B, in_channels, 1 + 4k, 16 h, 16 w] in [-1, 1] -> its moments [B, 2 latent_channels, 1 + k, h, w]
  // (mean, then log-variance), float32. Needs a load with_encoder; InputError for another shape. With `rows`
  // (parallel VAE encoding) this rank encodes its share of whole latent rows, the convolutions and the mid
  // attention reaching the other ranks as the split decode does, and every rank gets the whole moments.
  at::Tensor encode(const at::Tensor& video, const RowShare* rows = nullptr) const;
  // The same in tiles of tiles.sample_height x sample_width pixels overlapping by a quarter, as diffusers 0.42.1's
  // tiled_encode (the pipeline's vae.encode once tiling is on); whole where the video fits one tile.
  at::Tensor encode_tiled(const at::Tensor& video, const TileOptions& tiles, const DecodeProgress& progress = {}) const;

 private:
  struct Conv {  // a causal 3x3x3 convolution, or a 1x1x1 one
    at::Tensor weight, bias;
    at::Tensor operator()(const at::Tensor& x, RowExchange* rows = nullptr) const;
  };
  struct Resnet {
    at::Tensor norm1, norm2;  // gamma [C, 1, 1, 1]
    Conv conv1, conv2, shortcut;  // shortcut undefined when the channels stay
  };
  struct Attention {
    at::Tensor norm;
    Conv q, k, v, out;
  };
  struct Upsampler {
    Conv conv;
    bool temporal = false;
    int64_t repeats = 1;  // the shortcut's copies of each input channel
  };
  struct UpBlock {
    std::vector<Resnet> resnets;
    std::optional<Upsampler> upsampler;
  };
  struct Downsampler {
    Conv conv;
    bool temporal = false;
    int64_t group = 1;  // the shortcut averages groups of this many packed input channels
  };
  struct DownBlock {
    std::vector<Resnet> resnets;
    std::optional<Downsampler> downsampler;
  };
  struct Encoder {
    Conv conv_in, conv_out;
    std::vector<DownBlock> down;
    Resnet mid_1, mid_2;
    Attention mid_attention;
    at::Tensor norm_out;
  };
  at::Tensor resnet(const Resnet& r, const at::Tensor& x, RowExchange* rows = nullptr) const;
  at::Tensor attention(const Attention& a, const at::Tensor& x, RowExchange* rows = nullptr) const;
  at::Tensor upsample(const Upsampler& u, const at::Tensor& x, RowExchange* rows = nullptr) const;
  at::Tensor downsample(const Downsampler& d, const at::Tensor& x, RowExchange* rows = nullptr) const;

  plan::Hunyuan15VaeConfig cfg_;
  at::ScalarType dtype_ = at::kFloat;
  at::Device device_ = at::kCPU;
  Conv conv_in_, conv_out_;
  Resnet mid_1_, mid_2_;
  Attention mid_attention_;
  std::vector<UpBlock> up_;
  at::Tensor norm_out_;
  std::optional<Encoder> encoder_;
};

}  // namespace studio::models

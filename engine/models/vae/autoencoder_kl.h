// The decoder of the 2D AutoencoderKL (diffusers v0.32.2), FLUX.1's VAE: conv_in, a mid block (resnet,
// single-head attention over every position, resnet), up blocks of resnets with nearest 2x upsampling and
// a 3x3 convolution, then group norm, SiLU and conv_out. Behind the VAE seam (models/vae_decoder.h), an
// image is a video of one frame.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "models/layers/layers.h"
#include "models/vae_decoder.h"
#include "plan/families/flux_config.h"

namespace studio::models {

class AutoencoderKL final : public VaeDecoder {
 public:
  static std::shared_ptr<AutoencoderKL> load(const std::string& part_dir, const plan::AutoencoderKLConfig& cfg,
                                             at::ScalarType dtype, at::Device device);
  static std::shared_ptr<AutoencoderKL> load(io::WeightSet& weights, const plan::AutoencoderKLConfig& cfg,
                                             at::ScalarType dtype, at::Device device);

  // Latents [B, C, h, w] -> z [B, C, 1, h, w]: divided by the scaling factor, the shift factor added.
  at::Tensor prepare(const at::Tensor& final_latents, int pad_frames) const override;
  int output_frames(int) const override { return 1; }
  int spatial_compression() const override { return cfg_.spatial_compression(); }
  // The whole picture in one batch (this rank's rows of it with `rows`).
  void decode_batches(const at::Tensor& z, const std::function<void(const at::Tensor&)>& on_batch,
                      RowExchange* rows = nullptr, const DecodeProgress& progress = {}) const override;
  // Tiles of tiles.sample_height x sample_width pixels overlapping by a quarter, as diffusers' tiled_decode.
  at::Tensor decode_tiled(const at::Tensor& z, const TileOptions& tiles,
                          const DecodeProgress& progress = {}) const override;
  // z [B, C, h, w] -> image [B, out_channels, H, W], float32. With `rows`, z is this rank's rows and so is
  // the image: convolutions take a halo row from each neighbour, group norms the whole picture's
  // statistics, and the mid-block attention every rank's keys and values (exact, not approximated).
  // `progress` counts the decoder's levels: the middle block, each up block, the output.
  at::Tensor decode(const at::Tensor& z, RowExchange* rows = nullptr, const DecodeProgress& progress = {}) const;

 private:
  struct GroupNorm {
    at::Tensor weight, bias;
    int64_t groups = 32;
    at::Tensor operator()(const at::Tensor& x, RowExchange* rows) const;
  };
  struct Conv {
    at::Tensor weight, bias;
    at::Tensor operator()(const at::Tensor& x, RowExchange* rows) const;  // stride 1, padding kernel / 2
  };
  struct Resnet {
    GroupNorm norm1, norm2;
    Conv conv1, conv2, shortcut;  // shortcut: 1x1, when the channel count changes
    at::Tensor operator()(const at::Tensor& x, RowExchange* rows) const;
  };
  struct Attention {
    GroupNorm norm;
    Linear q, k, v, out;
    at::Tensor operator()(const at::Tensor& x, RowExchange* rows) const;
  };
  struct UpBlock {
    std::vector<Resnet> resnets;
    Conv upsample;  // undefined weight in the last block
  };

  plan::AutoencoderKLConfig cfg_;
  at::ScalarType dtype_ = at::kFloat;
  at::Device device_ = at::kCPU;
  Conv conv_in_, conv_out_;
  Resnet mid_first_, mid_second_;
  std::vector<Attention> mid_attention_;  // none when mid_block_add_attention is false
  std::vector<UpBlock> up_blocks_;
  GroupNorm norm_out_;
};

}  // namespace studio::models

// The decoder of CogVideoX's causal 3D VAE (AutoencoderKLCogVideoX, diffusers v0.32.2): latents are
// decoded in batches of 2 latent frames (the first batch takes the odd one), and every causal
// convolution carries the last frames of its input from one batch to the next, so no batch needs the
// whole video's activations.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "models/layers/layers.h"
#include "models/vae_decoder.h"
#include "plan/families/cogvideox_config.h"

namespace studio::models {

class CogVideoXVae final : public VaeDecoder {
 public:
  static std::shared_ptr<CogVideoXVae> load(const std::string& part_dir, const plan::CogVideoXVaeConfig& cfg,
                                            at::ScalarType dtype, at::Device device);
  static std::shared_ptr<CogVideoXVae> load(io::WeightSet& weights, const plan::CogVideoXVaeConfig& cfg, at::ScalarType dtype,
                                            at::Device device);

  const plan::CogVideoXVaeConfig& config() const { return cfg_; }
  // Latents [B, F, C, h, w] -> z [B, C, F - pad_frames, h, w] divided by the scaling factor.
  at::Tensor prepare(const at::Tensor& final_latents, int pad_frames) const override;
  int output_frames(int latent_frames) const override;
  int spatial_compression() const override { return cfg_.spatial_compression; }
  void decode_batches(const at::Tensor& z, const std::function<void(const at::Tensor&)>& on_batch,
                      RowExchange* rows = nullptr, const DecodeProgress& progress = {}) const override;
  at::Tensor decode_tiled(const at::Tensor& z, const TileOptions& tiles,
                          const DecodeProgress& progress = {}) const override;
  // decode_batches() collected into one tensor.
  at::Tensor decode(const at::Tensor& z) const;

 private:
  struct Impl;  // the layers, in the .cpp
  plan::CogVideoXVaeConfig cfg_;
  at::ScalarType dtype_ = at::kFloat;
  at::Device device_ = at::kCPU;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace studio::models

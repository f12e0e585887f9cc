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

#include "models/layers.h"
#include "plan/model_folder.h"

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
};

class CogVideoXVae {
 public:
  static std::shared_ptr<CogVideoXVae> load(const std::string& part_dir, const plan::VaeConfig& cfg,
                                            at::ScalarType dtype, at::Device device);
  static std::shared_ptr<CogVideoXVae> load(io::WeightSet& weights, const plan::VaeConfig& cfg, at::ScalarType dtype,
                                            at::Device device);

  const plan::VaeConfig& config() const { return cfg_; }
  int output_frames(int latent_frames) const;

  // z [B, C, F, h, w] (already divided by the scaling factor) -> video [B, out_channels, frames, H, W],
  // float32, handed to `on_batch` one batch of frames at a time as they are decoded (model device).
  // With `rows`, z is this rank's rows of the latents and so is every batch handed out.
  void decode_batches(const at::Tensor& z, const std::function<void(const at::Tensor&)>& on_batch,
                      RowExchange* rows = nullptr) const;
  // The same, collected into one tensor.
  at::Tensor decode(const at::Tensor& z) const;

 private:
  struct Impl;  // the layers, in the .cpp
  plan::VaeConfig cfg_;
  at::ScalarType dtype_ = at::kFloat;
  at::Device device_ = at::kCPU;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace studio::models

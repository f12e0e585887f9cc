// CLIP's vision tower (transformers' CLIPVisionModel) as Wan2.1 image-to-video runs it: the picture cut in
// patches, a class token, learned positions, pre_layrnorm, the encoder layers; the pipeline takes the hidden
// states before the last layer (hidden_states[-2]), so the last layer, the post-layernorm and the
// projection are never run. Its processor is models/image/pixel_values.h.
#pragma once
#include <memory>
#include <string>

#include <ATen/core/Tensor.h>

#include "plan/clip_config.h"
#include "text/encode/clip_layers.h"

namespace studio::models {

class ClipVisionEncoder {
 public:
  // image_encoder/ of a diffusers folder (model.safetensors, or shards).
  static std::shared_ptr<ClipVisionEncoder> load(const std::string& dir, const plan::ClipVisionConfig& cfg,
                                                 at::ScalarType dtype, at::Device device);
  // pixel_values [B, 3, image_size, image_size] -> hidden_states[-2] [B, tokens, hidden_size], float32.
  at::Tensor penultimate_hidden_states(const at::Tensor& pixel_values) const;

 private:
  plan::ClipVisionConfig cfg_;
  at::ScalarType dtype_ = at::kFloat;
  at::Device device_ = at::kCPU;
  at::Tensor class_embedding_, patch_weight_, positions_;
  text::ClipLayers::Affine pre_norm_;
  text::ClipLayers layers_;
};

}  // namespace studio::models

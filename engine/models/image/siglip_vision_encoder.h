// SigLIP's vision tower (transformers' SiglipVisionModel) as HunyuanVideo-1.5 image-to-video runs it: the
// picture cut in patches (a convolution with a bias), learned positions, no class token, CLIP's encoder
// layers with a tanh GELU, then the post-layernorm: last_hidden_state, one row per patch. The pooling head
// is never run. Its processor is models/image/pixel_values.h (siglip_pixel_values).
#pragma once
#include <memory>
#include <string>

#include <ATen/core/Tensor.h>

#include "plan/clip_config.h"
#include "text/encode/clip_layers.h"

namespace studio::models {

class SiglipVisionEncoder {
 public:
  // image_encoder/ of a diffusers folder (model.safetensors, or shards).
  static std::shared_ptr<SiglipVisionEncoder> load(const std::string& dir, const plan::ClipVisionConfig& cfg,
                                                   at::ScalarType dtype, at::Device device);
  // pixel_values [B, 3, image_size, image_size] -> last_hidden_state [B, patches, hidden_size], float32.
  at::Tensor last_hidden_state(const at::Tensor& pixel_values) const;

 private:
  plan::ClipVisionConfig cfg_;
  at::ScalarType dtype_ = at::kFloat;
  at::Device device_ = at::kCPU;
  at::Tensor patch_weight_, patch_bias_, positions_;
  text::ClipLayers::Affine post_norm_;
  text::ClipLayers layers_;
};

}  // namespace studio::models

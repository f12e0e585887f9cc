// CLIP's vision tower (transformers' CLIPVisionModel) and SigLIP's (SiglipVisionModel), which share their
// encoder layers: the picture cut in patches, learned positions, then the layers. CLIP adds a class token and
// pre_layrnorm, and Wan2.1 image-to-video takes the hidden states before the last layer (hidden_states[-2]:
// the last layer, the post-layernorm and the projection never run). SigLIP (HunyuanVideo-1.5 image-to-video)
// has no class token and a patch bias, and its pipeline takes last_hidden_state, after the post-layernorm
// (its pooling head never runs). Which tower a config is: plan::ClipVisionConfig::class_token. The
// processors are models/image/pixel_values.h.
#pragma once
#include <memory>
#include <string>

#include <ATen/core/Tensor.h>

#include "plan/clip_config.h"
#include "text/encode/clip_layers.h"

namespace studio::io {
class WeightSet;
}

namespace studio::models {

class ClipVisionEncoder {
 public:
  // image_encoder/ of a diffusers folder (model.safetensors, or shards).
  static std::shared_ptr<ClipVisionEncoder> load(const std::string& dir, const plan::ClipVisionConfig& cfg,
                                                 at::ScalarType dtype, at::Device device);
  static std::shared_ptr<ClipVisionEncoder> load(io::WeightSet& weights, const plan::ClipVisionConfig& cfg,
                                                 at::ScalarType dtype, at::Device device);
  // pixel_values [B, 3, image_size, image_size] -> what the family's pipeline reads, [B, tokens, hidden_size]
  // float32: CLIP's hidden_states[-2], SigLIP's last_hidden_state.
  at::Tensor image_embeds(const at::Tensor& pixel_values) const;

 private:
  plan::ClipVisionConfig cfg_;
  at::ScalarType dtype_ = at::kFloat;
  at::Device device_ = at::kCPU;
  at::Tensor class_embedding_, patch_weight_, patch_bias_, positions_;  // class token: CLIP; bias: SigLIP
  text::ClipLayers::Affine pre_norm_, post_norm_;                       // CLIP's before; SigLIP's after
  text::ClipLayers layers_;
};

}  // namespace studio::models

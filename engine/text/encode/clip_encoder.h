// CLIP's text model (transformers' CLIPTextModel) as FLUX.1 uses it: token and learned position
// embeddings, pre-norm blocks with causal self-attention and a quick-GELU MLP, a final layer norm, and
// the pooled output: the final hidden state at the end-of-text token.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "io/weights/weights.h"
#include "plan/clip_config.h"
#include "text/encode/clip_layers.h"

namespace studio::text {

class ClipTextEncoder {
 public:
  // text_encoder/ of a diffusers folder: model.safetensors, or shards named by model.safetensors.index.json.
  static std::shared_ptr<ClipTextEncoder> load(const std::string& dir, const plan::ClipTextConfig& cfg,
                                               at::ScalarType dtype, at::Device device);
  static std::shared_ptr<ClipTextEncoder> load(io::WeightSet& weights, const plan::ClipTextConfig& cfg,
                                               at::ScalarType dtype, at::Device device);

  struct Output {
    at::Tensor last_hidden_state;  // [B, L, hidden]
    at::Tensor pooled;             // [B, hidden]
  };
  // ids [B, L] int64, no attention mask (as FluxPipeline runs it).
  Output forward(const at::Tensor& ids) const;

 private:
  plan::ClipTextConfig cfg_;
  at::Device device_ = at::kCPU;
  at::Tensor token_table_, position_table_;
  ClipLayers layers_;
  ClipLayers::Affine final_norm_;
};

}  // namespace studio::text

// The T5 v1.1 encoder (transformers' T5EncoderModel) as CogVideoX uses it: token embeddings (not
// scaled), a relative position bias computed once from layer 0's table and added in every layer,
// unscaled attention scores, RMS norm in float32, gated-GELU feed-forward, pre-norm residuals and a
// final norm. No attention mask: padding attends and is attended to, as the pipeline runs it.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "io/weights.h"
#include "plan/model_folder.h"

namespace studio::text {

class T5Encoder {
 public:
  // text_encoder/ of a diffusers folder: model.safetensors, or shards named by model.safetensors.index.json.
  static std::shared_ptr<T5Encoder> load(const std::string& dir, const plan::T5Config& cfg, at::ScalarType dtype,
                                         at::Device device);
  static std::shared_ptr<T5Encoder> load(io::WeightSet& weights, const plan::T5Config& cfg, at::ScalarType dtype,
                                         at::Device device);

  // ids [B, L] (int64) -> last hidden state [B, L, d_model]; `block_outputs`, if given, receives each
  // block's output (before the final norm).
  at::Tensor forward(const at::Tensor& ids, std::vector<at::Tensor>* block_outputs = nullptr) const;
  // The relative position bias [1, heads, L, L] added to every layer's scores.
  at::Tensor position_bias(int64_t length) const;
  at::Tensor embed(const at::Tensor& ids) const;

 private:
  struct Block {
    at::Tensor attn_norm, q, k, v, o, ff_norm, wi_0, wi_1, wo;
  };
  plan::T5Config cfg_;
  at::ScalarType dtype_ = at::kFloat;
  at::Device device_ = at::kCPU;
  at::Tensor shared_, relative_bias_, final_norm_;
  std::vector<Block> blocks_;
};

}  // namespace studio::text

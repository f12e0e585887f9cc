// The T5 v1.1 encoder (transformers' T5EncoderModel) as CogVideoX and FLUX.1 use it: token embeddings
// (not scaled), a relative position bias computed once from layer 0's table and added in every layer,
// unscaled attention scores, RMS norm in float32, gated-GELU feed-forward, pre-norm residuals and a
// final norm. Without a mask padding attends and is attended to, as those pipelines run it.
// umT5 (UMT5EncoderModel, Wan's encoder; T5Config::per_layer_bias) is the same but for one thing: each
// layer adds the bias from its own table. Wan runs it with the attention mask: masked keys get float32's
// lowest value added to their scores, as transformers does.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "io/weights/weights.h"
#include "models/layers/layers.h"
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
  // The same with an attention mask [B, L] (1 for tokens, 0 for padding): padding keys are not attended to.
  at::Tensor forward(const at::Tensor& ids, const at::Tensor& mask,
                     std::vector<at::Tensor>* block_outputs = nullptr) const;
  // The relative position bias [1, heads, L, L] added to layer `layer`'s scores (every layer's for T5).
  at::Tensor position_bias(int64_t length, int layer = 0) const;
  at::Tensor embed(const at::Tensor& ids) const;
  int64_t width() const { return cfg_.d_model; }
  at::TensorOptions options() const { return at::TensorOptions(dtype_).device(device_); }

 private:
  struct Block {
    at::Tensor attn_norm, ff_norm;
    models::Linear q, k, v, o, wi_0, wi_1, wo;
    at::Tensor relative_bias;  // [buckets, heads] float32: umT5's own table; undefined for T5
  };
  plan::T5Config cfg_;
  at::ScalarType dtype_ = at::kFloat;
  at::Device device_ = at::kCPU;
  at::Tensor shared_, relative_bias_, final_norm_;
  std::vector<Block> blocks_;
};

}  // namespace studio::text

// A decoder-only language model as a text encoder: Qwen2 / Qwen2.5 (transformers' Qwen2_5_VLTextModel,
// HunyuanVideo-1.5's), Qwen3 (Qwen3Model) and Gemma 3 (Gemma3TextModel, LTX-2's). Token embeddings (Gemma: times
// sqrt(hidden)), then per layer an RMS norm (Gemma: times 1 + weight), attention with biases on q, k and v (none on
// o; Qwen3 and Gemma as their config says), an RMS norm over each head of q and k before RoPE (Qwen3, Gemma),
// grouped-query (each key/value head serves heads / kv query heads), RoPE on half-split pairs
// (x cos + [-x2, x1] sin; Qwen2.5-VL's M-RoPE is this for text, its three position streams being equal), a causal
// and padding mask (Gemma's local layers: within a sliding window, with RoPE of their own base); an RMS norm and
// the gated MLP down(act(gate(x)) * up(x)) (SiLU; Gemma: tanh-GELU, and norms on the attention's and the MLP's
// outputs); a final norm. A pipeline reads the hidden state of a chosen layer, so the layers after it never run.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "io/weights/weights.h"
#include "models/layers/layers.h"
#include "plan/llm_config.h"

namespace studio::text {

class LlmEncoder {
 public:
  // text_encoder/ of a diffusers folder (model.safetensors, or shards named by model.safetensors.index.json);
  // its weights as Qwen2_5_VLTextModel saves them, or under a whole model's "model." or "model.language_model."
  // (the rest of a whole model's file, its vision tower and head, is not read). With `reads`, the one hidden
  // state the caller will ask for (hidden_state's index): the layers after it, and the final norm unless it is
  // the last, are not loaded (HunyuanVideo-1.5 reads -3: the last two layers never load).
  static std::shared_ptr<LlmEncoder> load(const std::string& dir, const plan::LlmTextConfig& cfg,
                                           at::ScalarType dtype, at::Device device, std::optional<int> reads = {});
  static std::shared_ptr<LlmEncoder> load(io::WeightSet& weights, const plan::LlmTextConfig& cfg,
                                           at::ScalarType dtype, at::Device device, std::optional<int> reads = {});

  // transformers' hidden_states[index] for ids [B, L] (int64) with their mask [B, L] (1: a token, 0: padding
  // on either side): 0 the embeddings, i the output of layer i, num_layers that of the last after the final norm;
  // a negative index counts from the end (-1: the last). [B, L, hidden], in the encoder's dtype. std::out_of_range
  // for an index the model has not, std::logic_error for one after what the load read.
  at::Tensor hidden_state(const at::Tensor& ids, const at::Tensor& mask, int index) const;
  int num_layers() const { return cfg_.num_hidden_layers; }

 private:
  struct Layer {
    at::Tensor input_norm;        // before the attention
    at::Tensor attention_out_norm;  // Gemma: on the attention's output, before the residual
    at::Tensor mlp_norm;          // before the MLP (Qwen's post_attention_layernorm, Gemma's pre_feedforward_layernorm)
    at::Tensor mlp_out_norm;      // Gemma: on the MLP's output
    at::Tensor q_norm, k_norm;    // Qwen3, Gemma
    models::Linear q, k, v, o, gate, up, down;
  };
  plan::LlmTextConfig cfg_;
  at::ScalarType dtype_ = at::kFloat;
  at::Device device_ = at::kCPU;
  at::Tensor embed_tokens_, final_norm_;
  std::vector<Layer> layers_;
};

}  // namespace studio::text

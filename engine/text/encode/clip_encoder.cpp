#include "text/encode/clip_encoder.h"

#include <limits>

#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/argmax.h>
#include <ATen/ops/embedding.h>
#include <ATen/ops/full.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/triu.h>
#include <c10/core/InferenceMode.h>

#include "plan/error.h"

namespace studio::text {

std::shared_ptr<ClipTextEncoder> ClipTextEncoder::load(const std::string& dir, const plan::ClipTextConfig& cfg,
                                                       at::ScalarType dtype, at::Device device) {
  auto weights = io::WeightSet::open(dir, "model");
  return load(weights, cfg, dtype, device);
}

std::shared_ptr<ClipTextEncoder> ClipTextEncoder::load(io::WeightSet& w, const plan::ClipTextConfig& cfg,
                                                       at::ScalarType dtype, at::Device device) {
  auto e = std::make_shared<ClipTextEncoder>();
  e->cfg_ = cfg;
  e->device_ = device;
  const int64_t h = cfg.hidden_size, inner = cfg.intermediate_size;
  const std::string note = "from config.json's hidden_size / intermediate_size / vocab_size";
  auto take = [&](const std::string& name, std::vector<int64_t> shape) { return w.take(name, shape, dtype, device, note); };
  e->token_table_ = take("text_model.embeddings.token_embedding.weight", {cfg.vocab_size, h});
  e->position_table_ = take("text_model.embeddings.position_embedding.weight", {cfg.max_position_embeddings, h});
  e->layers_ = ClipLayers::load(take, "text_model.encoder.layers.", cfg.num_hidden_layers, h, inner,
                                cfg.num_attention_heads, cfg.layer_norm_eps, cfg.hidden_act);
  e->final_norm_ = {take("text_model.final_layer_norm.weight", {h}), take("text_model.final_layer_norm.bias", {h})};
  // transformers may save the position ids buffer; CLIPModel folders also hold the vision tower's
  // projection, which the text model does not use.
  w.expect_all_taken({"text_model.embeddings.position_ids", "text_projection.weight"});
  return e;
}

ClipTextEncoder::Output ClipTextEncoder::forward(const at::Tensor& input_ids) const {
  c10::InferenceMode guard;
  const auto ids = input_ids.to(device_);
  const int64_t B = ids.size(0), L = ids.size(1), h = cfg_.hidden_size;
  if (L > cfg_.max_position_embeddings)
    throw InputError("CLIP text encoder: " + std::to_string(L) + " tokens, but max_position_embeddings is " +
                     std::to_string(cfg_.max_position_embeddings));
  if (ids.min().item<int64_t>() < 0 || ids.max().item<int64_t>() >= cfg_.vocab_size)
    throw InputError("CLIP text encoder: token ids outside the vocabulary of " + std::to_string(cfg_.vocab_size));
  const auto opts = at::TensorOptions(at::kFloat).device(device_);
  // Each token sees itself and the tokens before it.
  const auto causal = at::triu(at::full({L, L}, -std::numeric_limits<float>::infinity(), opts), 1);

  auto x = layers_.run(at::embedding(token_table_, ids) + position_table_.slice(0, 0, L), causal, layers_.layers.size());
  x = layers_.norm(x, final_norm_);
  // Old configs (FLUX.1's among them) say eos_token_id 2: transformers then takes the highest id, which
  // is the end-of-text token in CLIP's vocabulary; otherwise the first end-of-text token.
  const auto end = cfg_.eos_token_id == 2 ? at::argmax(ids, -1) : at::argmax((ids == cfg_.eos_token_id).to(at::kInt), -1);
  const auto rows = at::arange(B, at::TensorOptions(at::kLong).device(device_));
  return {x, x.reshape({B * L, h}).index_select(0, rows * L + end)};
}

}  // namespace studio::text

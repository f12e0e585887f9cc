#include "text/encode/clip_encoder.h"

#include <cmath>
#include <limits>

#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/argmax.h>
#include <ATen/ops/embedding.h>
#include <ATen/ops/full.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/softmax.h>
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
  auto norm = [&](const std::string& name) { return LayerNorm{take(name + ".weight", {h}), take(name + ".bias", {h})}; };
  auto linear = [&](const std::string& name, int64_t out, int64_t in) {
    return Linear{take(name + ".weight", {out, in}), take(name + ".bias", {out})};
  };
  e->token_table_ = take("text_model.embeddings.token_embedding.weight", {cfg.vocab_size, h});
  e->position_table_ = take("text_model.embeddings.position_embedding.weight", {cfg.max_position_embeddings, h});
  for (int i = 0; i < cfg.num_hidden_layers; ++i) {
    const std::string p = "text_model.encoder.layers." + std::to_string(i) + ".";
    e->layers_.push_back({norm(p + "layer_norm1"), norm(p + "layer_norm2"), linear(p + "self_attn.q_proj", h, h),
                          linear(p + "self_attn.k_proj", h, h), linear(p + "self_attn.v_proj", h, h),
                          linear(p + "self_attn.out_proj", h, h), linear(p + "mlp.fc1", inner, h),
                          linear(p + "mlp.fc2", h, inner)});
  }
  e->final_norm_ = norm("text_model.final_layer_norm");
  // transformers may save the position ids buffer; CLIPModel folders also hold the vision tower's
  // projection, which the text model does not use.
  w.expect_all_taken({"text_model.embeddings.position_ids", "text_projection.weight"});
  return e;
}

ClipTextEncoder::Output ClipTextEncoder::forward(const at::Tensor& input_ids) const {
  c10::InferenceMode guard;
  const auto ids = input_ids.to(device_);
  const int64_t B = ids.size(0), L = ids.size(1), H = cfg_.num_attention_heads, h = cfg_.hidden_size;
  if (L > cfg_.max_position_embeddings)
    throw InputError("CLIP text encoder: " + std::to_string(L) + " tokens, but max_position_embeddings is " +
                     std::to_string(cfg_.max_position_embeddings));
  if (ids.min().item<int64_t>() < 0 || ids.max().item<int64_t>() >= cfg_.vocab_size)
    throw InputError("CLIP text encoder: token ids outside the vocabulary of " + std::to_string(cfg_.vocab_size));
  const double eps = cfg_.layer_norm_eps, scale = 1.0 / std::sqrt(double(h / H));
  auto norm = [&](const at::Tensor& x, const LayerNorm& n) { return at::layer_norm(x, {h}, n.weight, n.bias, eps); };
  auto linear = [](const at::Tensor& x, const Linear& l) { return at::linear(x, l.weight, l.bias); };
  const auto opts = at::TensorOptions(at::kFloat).device(device_);
  // Each token sees itself and the tokens before it.
  const auto causal = at::triu(at::full({L, L}, -std::numeric_limits<float>::infinity(), opts), 1);

  at::Tensor x = at::embedding(token_table_, ids) + position_table_.slice(0, 0, L);
  for (const auto& layer : layers_) {
    auto y = norm(x, layer.norm1);
    auto heads = [&](const Linear& l) { return linear(y, l).view({B, L, H, -1}).transpose(1, 2); };
    auto scores = at::matmul(heads(layer.q), heads(layer.k).transpose(-1, -2)).to(at::kFloat) * scale + causal;
    auto attn = at::matmul(at::softmax(scores, -1).to(x.scalar_type()), heads(layer.v));
    x = x + linear(attn.transpose(1, 2).reshape({B, L, h}), layer.out);
    y = linear(norm(x, layer.norm2), layer.fc1);
    y = cfg_.hidden_act == "gelu" ? at::gelu(y) : y * at::sigmoid(1.702 * y);
    x = x + linear(y, layer.fc2);
  }
  x = norm(x, final_norm_);
  // Old configs (FLUX.1's among them) say eos_token_id 2: transformers then takes the highest id, which
  // is the end-of-text token in CLIP's vocabulary; otherwise the first end-of-text token.
  const auto end = cfg_.eos_token_id == 2 ? at::argmax(ids, -1) : at::argmax((ids == cfg_.eos_token_id).to(at::kInt), -1);
  const auto rows = at::arange(B, at::TensorOptions(at::kLong).device(device_));
  return {x, x.reshape({B * L, h}).index_select(0, rows * L + end)};
}

}  // namespace studio::text

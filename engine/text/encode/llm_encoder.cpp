#include "text/encode/llm_encoder.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>

#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/embedding.h>
#include <ATen/ops/full.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/repeat_interleave.h>
#include <ATen/ops/rsqrt.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/silu.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/tril.h>
#include <ATen/ops/triu.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <c10/core/InferenceMode.h>

#include "plan/error.h"

namespace studio::text {

namespace {

// Qwen's RMS norm: the variance in float32, the normalised values back in the input's dtype, then the weight.
// Gemma's multiplies by 1 + weight in float32 before going back to the input's dtype.
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps, bool gemma) {
  const auto xf = x.to(at::kFloat);
  const auto normed = xf * at::rsqrt(xf.pow(2).mean({-1}, true) + eps);
  return gemma ? (normed * (weight.to(at::kFloat) + 1)).to(x.scalar_type()) : normed.to(x.scalar_type()) * weight;
}

// RoPE's cos and sin for positions 0..L-1 at `theta`, positions divided by `factor`, in `dtype`.
std::pair<at::Tensor, at::Tensor> rope_angles(int64_t L, int64_t hd, double theta, double factor, at::ScalarType dtype,
                                              const at::Device& device) {
  const auto f32 = at::TensorOptions(at::kFloat).device(device);
  const auto inv_freq = 1.0 / at::pow(theta, at::arange(0, hd, 2, f32.dtype(at::kLong)).to(at::kFloat) / double(hd)) / factor;
  const auto freqs = at::arange(L, f32).unsqueeze(1) * inv_freq.unsqueeze(0);
  const auto angles = at::cat({freqs, freqs}, -1);
  return {angles.cos().to(dtype), angles.sin().to(dtype)};
}

// x cos + rotate_half(x) sin, rotate_half(x) = [-x2, x1] over the two halves of each head.
at::Tensor rotate_half_pairs(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const int64_t half = x.size(-1) / 2;
  const auto turned = at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
  return x * cos + turned * sin;
}

// Where the language model's weights are: as Qwen2_5_VLTextModel saves them, or inside a whole model's file.
std::string weights_prefix(const io::WeightSet& w) {
  if (w.makes_weights()) return "";  // a synthetic set (the benchmarks') makes Qwen2_5_VLTextModel's layout
  for (const char* p : {"", "model.", "model.language_model.", "language_model.model.", "language_model."})
    if (w.contains(std::string(p) + "embed_tokens.weight")) return p;
  throw InputError("the text encoder's weights hold no embed_tokens.weight (under \"\", \"model.\", "
                   "\"model.language_model.\", \"language_model.model.\" or \"language_model.\"); is this a language "
                   "model's folder (Qwen, Gemma 3)?");
}

}  // namespace

std::shared_ptr<LlmEncoder> LlmEncoder::load(const std::string& dir, const plan::LlmTextConfig& cfg,
                                               at::ScalarType dtype, at::Device device, std::optional<int> reads) {
  auto weights = io::WeightSet::open(dir, "model");
  return load(weights, cfg, dtype, device, reads);
}

std::shared_ptr<LlmEncoder> LlmEncoder::load(io::WeightSet& w, const plan::LlmTextConfig& cfg, at::ScalarType dtype,
                                               at::Device device, std::optional<int> reads) {
  const int layers = reads ? cfg.layers_for(*reads) : cfg.num_hidden_layers;
  const bool final_norm = layers == cfg.num_hidden_layers;
  auto e = std::make_shared<LlmEncoder>();
  e->cfg_ = cfg;
  e->dtype_ = dtype;
  e->device_ = device;
  const std::string p = weights_prefix(w);
  const int64_t d = cfg.hidden_size, q = int64_t(cfg.num_attention_heads) * cfg.head_dim(),
                kv = int64_t(cfg.num_key_value_heads) * cfg.head_dim(), ff = cfg.intermediate_size;
  const models::WeightSource src{w, dtype, device};
  e->embed_tokens_ = src.take(p + "embed_tokens.weight", {cfg.vocab_size, d});
  for (int i = 0; i < layers; ++i) {
    const std::string l = p + "layers." + std::to_string(i) + ".";
    Layer layer;
    layer.input_norm = src.take(l + "input_layernorm.weight", {d});
    if (cfg.gemma) {
      layer.attention_out_norm = src.take(l + "post_attention_layernorm.weight", {d});
      layer.mlp_norm = src.take(l + "pre_feedforward_layernorm.weight", {d});
      layer.mlp_out_norm = src.take(l + "post_feedforward_layernorm.weight", {d});
    } else {
      layer.mlp_norm = src.take(l + "post_attention_layernorm.weight", {d});
    }
    layer.q = models::Linear::load(src, l + "self_attn.q_proj", d, q, cfg.qkv_bias);
    layer.k = models::Linear::load(src, l + "self_attn.k_proj", d, kv, cfg.qkv_bias);
    layer.v = models::Linear::load(src, l + "self_attn.v_proj", d, kv, cfg.qkv_bias);
    layer.o = models::Linear::load(src, l + "self_attn.o_proj", q, d, cfg.o_bias);
    if (cfg.qk_norm) {
      layer.q_norm = src.take(l + "self_attn.q_norm.weight", {cfg.head_dim()});
      layer.k_norm = src.take(l + "self_attn.k_norm.weight", {cfg.head_dim()});
    }
    layer.gate = models::Linear::load(src, l + "mlp.gate_proj", d, ff, false);
    layer.up = models::Linear::load(src, l + "mlp.up_proj", d, ff, false);
    layer.down = models::Linear::load(src, l + "mlp.down_proj", ff, d, false);
    e->layers_.push_back(std::move(layer));
  }
  if (final_norm) e->final_norm_ = src.take(p + "norm.weight", {d});
  // A whole model's file also holds its vision tower and its head, which a text encoder does not read; the layers
  // after the hidden state read are not read either.
  std::set<std::string> others;
  for (const auto& name : w.names())
    if (name.rfind(p, 0) != 0 || name.rfind(p + "visual.", 0) == 0 || (!final_norm && name == p + "norm.weight"))
      others.insert(name);
  for (int i = layers; i < cfg.num_hidden_layers; ++i)
    for (const auto& name : w.names())
      if (name.rfind(p + "layers." + std::to_string(i) + ".", 0) == 0) others.insert(name);
  others.insert("lm_head.weight");
  w.expect_all_taken(others);
  return e;
}

at::Tensor LlmEncoder::hidden_state(const at::Tensor& ids_in, const at::Tensor& mask_in, int index) const {
  c10::InferenceMode guard;
  const int n = num_layers();
  index = cfg_.layers_for(index);
  if (index > int(layers_.size()) || (index == n && !final_norm_.defined()))
    throw std::logic_error("LlmEncoder::hidden_state: hidden state " + std::to_string(index) +
                           " is after what the encoder was loaded to read");
  if (ids_in.dim() != 2 || mask_in.sizes() != ids_in.sizes())
    throw std::invalid_argument("LlmEncoder::hidden_state: ids and mask must be [B, L] alike");
  const auto ids = ids_in.to(device_, at::kLong);
  if (ids.min().item<int64_t>() < 0 || ids.max().item<int64_t>() >= cfg_.vocab_size)
    throw InputError("text encoder: token ids outside the vocabulary of " + std::to_string(cfg_.vocab_size));
  const int64_t B = ids.size(0), L = ids.size(1), H = cfg_.num_attention_heads, KV = cfg_.num_key_value_heads,
                hd = cfg_.head_dim();
  at::Tensor x = at::embedding(embed_tokens_, ids);
  if (cfg_.gemma) x = x * at::scalar_tensor(std::sqrt(double(cfg_.hidden_size)), x.options());  // rounded to the dtype
  if (index == 0) return x;

  // Positions 0..L-1 whichever side the batch is padded on, as transformers' text models number them when given
  // no position ids (a prompt padded on the left starts at its first token's column).
  const auto f32 = at::TensorOptions(at::kFloat).device(device_);
  const auto global = rope_angles(L, hd, cfg_.rope_theta, cfg_.rope_linear_factor, dtype_, device_);
  const auto local = cfg_.sliding_layers.empty() ? global : rope_angles(L, hd, cfg_.sliding_rope_theta, 1, dtype_, device_);
  // A query sees the keys at or before it that are tokens (a local layer's: the last sliding_window of them): 0
  // added to their scores, float32's lowest elsewhere.
  const auto causal = at::tril(at::ones({L, L}, f32));
  const auto tokens = mask_in.to(device_).to(at::kBool).view({B, 1, L});
  const auto bias_of = [&](const at::Tensor& seen) {
    return at::where(seen, at::zeros({1}, f32), at::full({1}, std::numeric_limits<float>::lowest(), f32)).unsqueeze(1);
  };
  const auto bias = bias_of(causal.to(at::kBool).unsqueeze(0) & tokens);
  const auto local_bias = cfg_.sliding_layers.empty()
                              ? bias
                              : bias_of(at::triu(causal, -(cfg_.sliding_window - 1)).to(at::kBool).unsqueeze(0) & tokens);
  const double scale = 1.0 / std::sqrt(cfg_.query_pre_attn_scalar > 0 ? cfg_.query_pre_attn_scalar : double(hd));
  const auto norm = [&](const at::Tensor& t, const at::Tensor& w) { return rms_norm(t, w, cfg_.rms_norm_eps, cfg_.gemma); };

  for (int i = 0; i < std::min(index, n); ++i) {
    const Layer& layer = layers_[size_t(i)];
    const bool sliding = !cfg_.sliding_layers.empty() && cfg_.sliding_layers[size_t(i)];
    const auto& [cos, sin] = sliding ? local : global;
    auto h = norm(x, layer.input_norm);
    const auto heads = [&](const models::Linear& w, int64_t count, const at::Tensor& head_norm) {
      const auto t = w(h).view({B, L, count, hd});
      return (head_norm.defined() ? norm(t, head_norm) : t).transpose(1, 2);
    };
    const auto q = rotate_half_pairs(heads(layer.q, H, layer.q_norm), cos, sin);
    const auto k = at::repeat_interleave(rotate_half_pairs(heads(layer.k, KV, layer.k_norm), cos, sin), H / KV, 1);
    const auto v = at::repeat_interleave(heads(layer.v, KV, {}), H / KV, 1);
    const auto scores = at::matmul(q, k.transpose(-1, -2)).to(at::kFloat) * scale + (sliding ? local_bias : bias);
    const auto attn = at::matmul(at::softmax(scores, -1).to(dtype_), v);
    auto out = layer.o(attn.transpose(1, 2).reshape({B, L, H * hd}));
    x = x + (layer.attention_out_norm.defined() ? norm(out, layer.attention_out_norm) : out);
    h = norm(x, layer.mlp_norm);
    out = layer.down((cfg_.gemma ? at::gelu(layer.gate(h), "tanh") : at::silu(layer.gate(h))) * layer.up(h));
    x = x + (layer.mlp_out_norm.defined() ? norm(out, layer.mlp_out_norm) : out);
  }
  return index == n ? norm(x, final_norm_) : x;
}

}  // namespace studio::text

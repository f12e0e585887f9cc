#include "text/encode/t5_encoder.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/embedding.h>
#include <ATen/ops/full_like.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/log.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/minimum.h>
#include <ATen/ops/rsqrt.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/where.h>
#include <c10/core/InferenceMode.h>

#include "models/layers/layers.h"
#include "plan/error.h"

namespace studio::text {

std::shared_ptr<T5Encoder> T5Encoder::load(const std::string& dir, const plan::T5Config& cfg, at::ScalarType dtype,
                                           at::Device device) {
  auto weights = io::WeightSet::open(dir, "model");
  return load(weights, cfg, dtype, device);
}

std::shared_ptr<T5Encoder> T5Encoder::load(io::WeightSet& w, const plan::T5Config& cfg, at::ScalarType dtype,
                                           at::Device device) {
  auto e = std::make_shared<T5Encoder>();
  e->cfg_ = cfg;
  e->dtype_ = dtype;
  e->device_ = device;
  const int64_t d = cfg.d_model, inner = int64_t(cfg.num_heads) * cfg.d_kv, ff = cfg.d_ff;
  const models::WeightSource src{w, dtype, device};
  // The token table is `shared.weight`; transformers sometimes saves only its tied copy.
  const std::string table = w.contains("shared.weight") || !w.contains("encoder.embed_tokens.weight")
                                ? "shared.weight"
                                : "encoder.embed_tokens.weight";
  e->shared_ = src.take(table, {cfg.vocab_size, d});
  auto bias_table = [&](int layer) {
    return w.take("encoder.block." + std::to_string(layer) + ".layer.0.SelfAttention.relative_attention_bias.weight",
                  {cfg.relative_attention_num_buckets, cfg.num_heads}, at::kFloat, device);
  };
  if (!cfg.per_layer_bias) e->relative_bias_ = bias_table(0);
  for (int i = 0; i < cfg.num_layers; ++i) {
    const std::string b = "encoder.block." + std::to_string(i) + ".layer.";
    Block blk;
    if (cfg.per_layer_bias) blk.relative_bias = bias_table(i);
    blk.attn_norm = w.take(b + "0.layer_norm.weight", {d}, at::kFloat, device);
    // Linear layers keep a quantized file's weights quantized (GGUF, fp8), dequantized per call.
    blk.q = models::Linear::load(src, b + "0.SelfAttention.q", d, inner, false);
    blk.k = models::Linear::load(src, b + "0.SelfAttention.k", d, inner, false);
    blk.v = models::Linear::load(src, b + "0.SelfAttention.v", d, inner, false);
    blk.o = models::Linear::load(src, b + "0.SelfAttention.o", inner, d, false);
    blk.ff_norm = w.take(b + "1.layer_norm.weight", {d}, at::kFloat, device);
    blk.wi_0 = models::Linear::load(src, b + "1.DenseReluDense.wi_0", d, ff, false);
    blk.wi_1 = models::Linear::load(src, b + "1.DenseReluDense.wi_1", d, ff, false);
    blk.wo = models::Linear::load(src, b + "1.DenseReluDense.wo", ff, d, false);
    e->blocks_.push_back(std::move(blk));
  }
  e->final_norm_ = w.take("encoder.final_layer_norm.weight", {d}, at::kFloat, device);
  // A tied copy of the token table may be saved too, and ComfyUI's umT5 files keep the tokenizer's model;
  // nothing else is expected.
  w.expect_all_taken({"encoder.embed_tokens.weight", "shared.weight", "spiece_model"});
  return e;
}

at::Tensor T5Encoder::position_bias(int64_t L, int layer) const {
  if (layer < 0 || layer >= int(blocks_.size()))
    throw std::out_of_range("T5Encoder::position_bias: no layer " + std::to_string(layer));
  // Bidirectional buckets: half for keys before the query, half after; exact up to half a half, then
  // logarithmic up to max_distance.
  const int64_t buckets = cfg_.relative_attention_num_buckets / 2, exact = buckets / 2;
  auto pos = at::arange(L, at::TensorOptions().dtype(at::kLong).device(device_));
  auto rel = pos.view({1, L}) - pos.view({L, 1});  // key - query
  auto bucket = (rel > 0).to(at::kLong) * buckets;
  rel = rel.abs();
  auto large = exact + (at::log(rel.to(at::kFloat) / exact) / std::log(double(cfg_.relative_attention_max_distance) / exact) *
                        double(buckets - exact))
                           .to(at::kLong);
  large = at::minimum(large, at::full_like(large, buckets - 1));
  bucket = bucket + at::where(rel < exact, rel, large);
  const at::Tensor& table = cfg_.per_layer_bias ? blocks_[size_t(layer)].relative_bias : relative_bias_;
  return at::embedding(table, bucket).permute({2, 0, 1}).unsqueeze(0);  // [1, heads, L, L]
}

at::Tensor T5Encoder::embed(const at::Tensor& ids) const { return at::embedding(shared_, ids.to(device_)); }

namespace {

// T5's layer norm: no mean subtraction, no bias; the variance in float32.
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  auto xf = x.to(at::kFloat);
  auto y = xf * at::rsqrt(xf.pow(2).mean({-1}, true) + eps);
  return (weight * y).to(x.scalar_type());
}

}  // namespace

at::Tensor T5Encoder::forward(const at::Tensor& ids, std::vector<at::Tensor>* block_outputs) const {
  return forward(ids, at::Tensor(), block_outputs);
}

at::Tensor T5Encoder::forward(const at::Tensor& ids, const at::Tensor& mask,
                              std::vector<at::Tensor>* block_outputs) const {
  c10::InferenceMode guard;
  const int64_t B = ids.size(0), L = ids.size(1), H = cfg_.num_heads;
  const double eps = cfg_.layer_norm_epsilon;
  if (ids.min().item<int64_t>() < 0 || ids.max().item<int64_t>() >= cfg_.vocab_size)
    throw InputError("text encoder: token ids outside the vocabulary of " + std::to_string(cfg_.vocab_size));
  at::Tensor x = embed(ids);
  // transformers' extended mask: 0 where a key is a token, the lowest float where it is padding.
  at::Tensor mask_bias;
  if (mask.defined()) {
    if (mask.sizes() != ids.sizes())
      throw std::invalid_argument("T5Encoder::forward: the mask's shape differs from the ids'");
    mask_bias = (1.0 - mask.to(device_, at::kFloat)).mul(std::numeric_limits<float>::lowest()).view({B, 1, 1, L});
  }
  const at::Tensor shared_bias = cfg_.per_layer_bias ? at::Tensor() : position_bias(L);
  for (size_t i = 0; i < blocks_.size(); ++i) {
    const Block& blk = blocks_[i];
    at::Tensor bias = shared_bias.defined() ? shared_bias : position_bias(L, int(i));
    if (mask_bias.defined()) bias = bias + mask_bias;
    auto h = rms_norm(x, blk.attn_norm, eps);
    auto heads = [&](const models::Linear& w) { return w(h).view({B, L, H, -1}).transpose(1, 2); };
    auto scores = at::matmul(heads(blk.q), heads(blk.k).transpose(-1, -2)).to(at::kFloat) + bias;  // no 1/sqrt(d)
    auto attn = at::matmul(at::softmax(scores, -1).to(x.scalar_type()), heads(blk.v));
    x = x + blk.o(attn.transpose(1, 2).reshape({B, L, -1}));
    h = rms_norm(x, blk.ff_norm, eps);
    x = x + blk.wo(at::gelu(blk.wi_0(h), "tanh") * blk.wi_1(h));
    if (block_outputs) block_outputs->push_back(x);
  }
  return rms_norm(x, final_norm_, eps);
}

}  // namespace studio::text

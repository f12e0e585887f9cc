#include "models/hunyuan15/hunyuan15_transformer.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/addcmul.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/silu.h>
#include <ATen/ops/zeros.h>

#include <set>
#include <stdexcept>

#include "compat/torch_compat.h"
#include "io/safetensors/safetensors_file.h"
#include "models/condition.h"
#include "models/layers/positions.h"
#include "plan/error.h"

namespace studio::models {

namespace {

constexpr double kBlockEps = 1e-6;       // the blocks' and the refiner's norms
constexpr double kProjectionEps = 1e-5;  // nn.LayerNorm's default: the ByT5 and picture projections
constexpr int64_t kGlyphWidth = 2048;    // the ByT5 projection's middle width, fixed in diffusers

at::Tensor heads(const at::Tensor& x, int64_t head_dim) { return x.unflatten(-1, {-1, head_dim}).transpose(1, 2); }

// The real rows of `t` [B, T, d] (the first `valid` [B] of each sample), the same count for the whole call.
at::Tensor real_rows(const at::Tensor& t, const at::Tensor& valid) {
  if (!t.defined() || !valid.defined()) return t;
  const int64_t n = valid[0].item<int64_t>();
  if (!valid.eq(n).all().item<bool>())
    throw std::logic_error("internal error: the samples of one call differ in text length");
  return t.narrow(1, 0, n);
}

}  // namespace

std::shared_ptr<Hunyuan15Transformer> Hunyuan15Transformer::load(io::WeightSet& weights,
                                                                 const plan::Hunyuan15TransformerConfig& cfg,
                                                                 at::ScalarType dtype, at::Device device,
                                                                 BlockRange range,
                                                                 std::shared_ptr<BlockWeights> block_weights) {
  WeightSource w{weights, dtype, device};
  auto m = std::make_shared<Hunyuan15Transformer>();
  m->set_block_weights(std::move(block_weights));
  m->cfg_ = cfg;
  m->dtype_ = dtype;
  m->device_ = device;
  m->range_ = range;
  const int64_t D = cfg.inner_dim(), hd = cfg.attention_head_dim, in = cfg.in_channels, T = cfg.text_embed_dim,
                I = cfg.image_embed_dim, G = cfg.text_embed_2_dim;
  // The 1x1x1 patch convolution is a linear layer over the channels.
  m->x_embedder_.weight = w.take("x_embedder.proj.weight", {D, in, 1, 1, 1}).view({D, in});
  m->x_embedder_.bias = w.take("x_embedder.proj.bias", {D});
  m->x_embedder_.dtype = dtype;
  m->image_norm_in_ = LayerNorm::load(w, "image_embedder.norm_in", I, kProjectionEps, true);
  m->image_1_ = Linear::load(w, "image_embedder.linear_1", I, I);
  m->image_2_ = Linear::load(w, "image_embedder.linear_2", I, D);
  m->image_norm_out_ = LayerNorm::load(w, "image_embedder.norm_out", D, kProjectionEps, true);
  const std::string r = "context_embedder.";
  m->refiner_time_ = {Linear::load(w, r + "time_text_embed.timestep_embedder.linear_1", 256, D),
                      Linear::load(w, r + "time_text_embed.timestep_embedder.linear_2", D, D)};
  m->refiner_text_ = {Linear::load(w, r + "time_text_embed.text_embedder.linear_1", T, D),
                      Linear::load(w, r + "time_text_embed.text_embedder.linear_2", D, D)};
  m->refiner_in_ = Linear::load(w, r + "proj_in", T, D);
  for (int i = 0; i < cfg.num_refiner_layers; ++i) {
    const std::string b = r + "token_refiner.refiner_blocks." + std::to_string(i) + ".";
    m->refiner_.push_back({LayerNorm::load(w, b + "norm1", D, kBlockEps, true),
                           LayerNorm::load(w, b + "norm2", D, kBlockEps, true), Linear::load(w, b + "attn.to_q", D, D),
                           Linear::load(w, b + "attn.to_k", D, D), Linear::load(w, b + "attn.to_v", D, D),
                           Linear::load(w, b + "attn.to_out.0", D, D), Linear::load(w, b + "ff.net.0.proj", D, 4 * D),
                           Linear::load(w, b + "ff.net.2", 4 * D, D), Linear::load(w, b + "norm_out.linear", D, 2 * D)});
  }
  m->glyph_norm_ = LayerNorm::load(w, "context_embedder_2.norm", G, kProjectionEps, true);
  m->glyph_1_ = Linear::load(w, "context_embedder_2.linear_1", G, kGlyphWidth);
  m->glyph_2_ = Linear::load(w, "context_embedder_2.linear_2", kGlyphWidth, kGlyphWidth);
  m->glyph_3_ = Linear::load(w, "context_embedder_2.linear_3", kGlyphWidth, D);
  m->time_ = {Linear::load(w, "time_embed.timestep_embedder.linear_1", 256, D),
              Linear::load(w, "time_embed.timestep_embedder.linear_2", D, D)};
  m->cond_type_ = w.take("cond_type_embed.weight", {3, D});
  std::set<std::string> elsewhere;  // the weights of blocks another PipeFusion stage holds
  for (int i = 0; i < cfg.num_layers; ++i) {
    const std::string b = "transformer_blocks." + std::to_string(i) + ".";
    if (range.holds(size_t(i))) {
      m->blocks_.push_back(DualStreamBlock::load(w, b, D, hd, cfg.mlp_dim()));
    } else {
      for (const auto& name : weights.names())
        if (name.rfind(b, 0) == 0) elsewhere.insert(name);
      m->blocks_.emplace_back();
    }
    m->block_loaded();
  }
  m->norm_out_ = Linear::load(w, "norm_out.linear", D, 2 * D);
  m->proj_out_ = Linear::load(w, "proj_out", D, cfg.out_channels);
  weights.expect_all_taken(elsewhere);
  return m;
}

void Hunyuan15Transformer::check_inputs(const at::Tensor& l, const at::Tensor& t, const char* text_name) const {
  auto shape = [](const at::Tensor& x) { return io::shape_str(x.sizes().vec()); };
  if (l.dim() != 5 || l.size(1) != cfg_.out_channels)
    throw InputError("latents have shape " + shape(l) + "; the model needs [B, " + std::to_string(cfg_.out_channels) +
                     ", frames, h, w] (out_channels of transformer/config.json)");
  if (t.dim() != 3 || t.size(0) != l.size(0) || t.size(2) != cfg_.text_embed_dim)
    throw InputError(std::string(text_name) + " has shape " + shape(t) + "; the model needs [" +
                     std::to_string(l.size(0)) + ", T, " + std::to_string(cfg_.text_embed_dim) +
                     "] (batch of the latents, text_embed_dim of transformer/config.json)");
}

TokenGrid Hunyuan15Transformer::token_grid(const at::Tensor& l) const {
  return {int(l.size(2)), int(l.size(3)), int(l.size(4))};
}

Positions Hunyuan15Transformer::positions(const TokenGrid& g) const {
  // diffusers' HunyuanVideoRotaryPosEmbed: the angles in float32.
  auto [cos, sin] = axial_rope(g.frames, g.rows, g.cols, cfg_.rope_axes_dim, cfg_.rope_theta, at::kFloat);
  return {{}, cos.to(device_), sin.to(device_)};
}

std::vector<int64_t> Hunyuan15Transformer::output_shape(const at::Tensor& l) const { return l.sizes().vec(); }

at::Tensor Hunyuan15Transformer::embed_timestep(const Mlp& mlp, const at::Tensor& timestep) const {
  const auto sinusoid = timestep_embedding(timestep.to(device_, at::kFloat) * 1000, 256, true, 0).to(dtype_);
  return mlp.linear_2(at::silu(mlp.linear_1(sinusoid)));
}

Conditioning Hunyuan15Transformer::condition(const StepInputs& in) const { return {embed_timestep(time_, in.timestep)}; }

int64_t Hunyuan15Transformer::text_rows(const StepInputs& in, const Conditioning&) const {
  const auto text_2 = real_rows(in.text_2, in.text_2_valid);
  return real_rows(in.text, in.text_valid).size(1) + (text_2.defined() ? text_2.size(1) : 0) +
         (in.image.defined() ? in.image.size(1) : 0);
}

at::Tensor Hunyuan15Transformer::refine(const at::Tensor& text, const at::Tensor& timestep) const {
  const auto x = text.to(device_, dtype_);
  const auto c = embed_timestep(refiner_time_, timestep) +
                 refiner_text_.linear_2(at::silu(refiner_text_.linear_1(x.mean(1))));
  const auto act = at::silu(c);
  const int64_t hd = cfg_.attention_head_dim;
  auto h = refiner_in_(x);
  for (const auto& b : refiner_) {
    const auto n = b.norm1(h);
    const auto attn = compat::attention(heads(b.q(n), hd), heads(b.k(n), hd), heads(b.v(n), hd));
    const auto gates = b.gates(act).unsqueeze(1).chunk(2, -1);
    h = at::addcmul(h, b.out(attn.transpose(1, 2).flatten(2)), gates[0]);
    h = at::addcmul(h, b.ff_out(at::silu(b.ff_in(b.norm2(h)))), gates[1]);
  }
  return h;
}

Tokens Hunyuan15Transformer::embed(const StepInputs& in, const Positions&) const {
  const auto& l = in.latents;
  const int64_t extra = cfg_.in_channels - cfg_.out_channels;
  // From words alone the picture's channels are zeros, as the reference feeds them.
  const auto condition = in.condition.defined()
                             ? in.condition
                             : at::zeros({l.size(0), extra, l.size(2), l.size(3), l.size(4)}, l.options());
  StepInputs joined = in;
  joined.condition = condition;
  const auto x = join_condition(joined, extra, 1).to(device_, dtype_);
  Tokens t;
  t.latent = x_embedder_(x.flatten(2).transpose(1, 2));
  // The text rows in the reference's order: the picture's, the glyphs', the refined Qwen rows.
  std::vector<at::Tensor> text;
  if (in.image.defined()) {
    const auto p = image_norm_in_(in.image.to(device_, dtype_));
    text.push_back(image_norm_out_(image_2_(at::gelu(image_1_(p)))) + cond_type_[2]);
  }
  if (const auto text_2 = real_rows(in.text_2, in.text_2_valid); text_2.defined() && text_2.size(1) > 0) {
    const auto g = glyph_norm_(text_2.to(device_, dtype_));
    text.push_back(glyph_3_(at::gelu(glyph_2_(at::gelu(glyph_1_(g))))) + cond_type_[1]);
  }
  text.push_back(refine(real_rows(in.text, in.text_valid), in.timestep) + cond_type_[0]);
  t.text = at::cat(text, 1);
  return t;
}

std::vector<at::Tensor> Hunyuan15Transformer::block_tensors(size_t i) const { return blocks_.at(i).tensors(); }

void Hunyuan15Transformer::block_forward(size_t i, Tokens& x, const Conditioning& c, const at::Tensor& cos,
                                         const at::Tensor& sin, const AttentionFn& attention) const {
  if (!range_.holds(i))
    throw std::logic_error("internal error: block " + std::to_string(i) + " is another PipeFusion stage's");
  blocks_[i](x, at::silu(c.embedding), cos, sin, attention, cfg_.attention_head_dim);
}

// As TeaCache does for the other dual-stream models: the first block's modulated input of the latent rows.
ChangeIndicator Hunyuan15Transformer::teacache_indicator(const Tokens& x, const Conditioning& c) const {
  if (blocks_.empty() || !range_.holds(0)) throw std::logic_error("internal error: TeaCache needs the first block");
  return {blocks_[0].modulated_latent(x.latent, at::silu(c.embedding)), true};
}

at::Tensor Hunyuan15Transformer::project_out(const at::Tensor& latent, const Conditioning& c) const {
  const auto m = norm_out_(at::silu(c.embedding)).unsqueeze(1).chunk(2, -1);  // scale, then shift
  return proj_out_(at::addcmul(m[1], at::layer_norm(latent, {latent.size(-1)}, {}, {}, kBlockEps), 1 + m[0]));
}

at::Tensor Hunyuan15Transformer::unpatchify(const at::Tensor& patches, const at::Tensor& l) const {
  return patches.reshape({l.size(0), l.size(2), l.size(3), l.size(4), -1}).permute({0, 4, 1, 2, 3});
}

}  // namespace studio::models

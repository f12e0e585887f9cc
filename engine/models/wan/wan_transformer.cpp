#include "models/wan/wan_transformer.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/conv3d.h>
#include <ATen/ops/cos.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/silu.h>
#include <ATen/ops/sin.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>

#include <set>
#include <stdexcept>

#include "compat/torch_compat.h"
#include "models/condition.h"
#include "models/layers/positions.h"
#include "plan/error.h"

namespace studio::models {

namespace {

// diffusers' FP32LayerNorm without weights: in float32 whatever the input.
at::Tensor layer_norm32(const at::Tensor& x, double eps) {
  return at::layer_norm(x.to(at::kFloat), {x.size(-1)}, {}, {}, eps);
}

// x * (1 + scale) + shift, in float32, back in `dtype`.
at::Tensor modulate(const at::Tensor& normed, const at::Tensor& shift, const at::Tensor& scale, at::ScalarType dtype) {
  return (normed * (1 + scale) + shift).to(dtype);
}

// One modulation vector a sample [B, 1, width], or one per distinct timestep [B, U, 1, width] -> what each latent
// token held takes ([B, tokens, width]).
at::Tensor for_tokens(const at::Tensor& m, const Conditioning& c) {
  return c.token_rows.defined() ? m.squeeze(-2).index_select(1, c.token_rows) : m;
}

}  // namespace

Positions wan_positions(const plan::WanTransformerConfig& cfg, const TokenGrid& g) {
  const int64_t d = cfg.attention_head_dim;
  const int64_t built_hw = 2 * (d / 6), built_t = d - 2 * built_hw;  // the table's (frame, row, column) widths
  const int64_t used_hw = d / 3, used_t = d - 2 * used_hw;           // the widths the split reads per axis
  const auto f64 = at::TensorOptions(at::kDouble);
  // Each column's frequency, theta^(-2k/dim) in float64 and repeated for a pair, as get_1d_rotary_pos_embed.
  auto freqs = [&](int64_t dim) {
    return (1.0 / at::pow(10000.0, at::arange(0, dim, 2, f64) / double(dim))).repeat_interleave(2);
  };
  const auto column_freq = at::cat({freqs(built_t), freqs(built_hw), freqs(built_hw)});
  std::vector<int64_t> column_axis;
  for (int64_t c = 0; c < d; ++c) column_axis.push_back(c < used_t ? 0 : c < used_t + used_hw ? 1 : 2);
  const int64_t per_frame = int64_t(g.rows) * g.cols;
  const auto token_axes = at::stack({at::arange(g.frames, f64).repeat_interleave(per_frame),
                                     at::arange(g.rows, f64).repeat_interleave(g.cols).repeat({g.frames}),
                                     at::arange(g.cols, f64).repeat({int64_t(g.frames) * g.rows})},
                                    1);  // [tokens, 3]
  const auto angles = token_axes.index_select(1, at::tensor(column_axis)) * column_freq;
  // diffusers rotates pair k by the cosine of column 2k and the sine of column 2k + 1.
  std::vector<int64_t> even, odd;
  for (int64_t k = 0; k < d / 2; ++k) {
    even.insert(even.end(), {2 * k, 2 * k});
    odd.insert(odd.end(), {2 * k + 1, 2 * k + 1});
  }
  return {{}, at::cos(angles).to(at::kFloat).index_select(1, at::tensor(even)),
          at::sin(angles).to(at::kFloat).index_select(1, at::tensor(odd))};
}

std::shared_ptr<WanTransformer> WanTransformer::load(const std::string& part_dir,
                                                     const plan::WanTransformerConfig& cfg, at::ScalarType dtype,
                                                     at::Device device, BlockRange range,
                                                     std::shared_ptr<BlockWeights> block_weights) {
  auto weights = io::WeightSet::open(part_dir, "diffusion_pytorch_model");
  return load(weights, cfg, dtype, device, range, std::move(block_weights));
}

std::shared_ptr<WanTransformer> WanTransformer::load(io::WeightSet& weights, const plan::WanTransformerConfig& cfg,
                                                     at::ScalarType dtype, at::Device device, BlockRange range,
                                                     std::shared_ptr<BlockWeights> block_weights) {
  WeightSource w{weights, dtype, device};
  // diffusers keeps the timestep embedder, the modulation tables and the block norms in float32 for float16.
  WeightSource kept{weights, dtype == at::kHalf ? at::kFloat : dtype, device};
  auto m = std::make_shared<WanTransformer>();
  m->set_block_weights(std::move(block_weights));
  m->cfg_ = cfg;
  m->dtype_ = dtype;
  m->device_ = device;
  m->range_ = range;
  const int64_t D = cfg.inner_dim(), ffn = cfg.ffn_dim;
  const auto& p = cfg.patch_size;
  std::set<std::string> ignorable;  // the weights of blocks another PipeFusion stage holds
  for (const auto& name : weights.names())
    if (name.find("norm_added_q") != std::string::npos) ignorable.insert(name);  // diffusers ignores these too
  m->patch_weight_ = w.take("patch_embedding.weight", {D, cfg.in_channels, p[0], p[1], p[2]});
  m->patch_bias_ = w.take("patch_embedding.bias", {D});
  m->time_1_ = Linear::load(kept, "condition_embedder.time_embedder.linear_1", cfg.freq_dim, D);
  m->time_2_ = Linear::load(kept, "condition_embedder.time_embedder.linear_2", D, D);
  m->time_proj_ = Linear::load(w, "condition_embedder.time_proj", D, 6 * D);
  m->text_1_ = Linear::load(w, "condition_embedder.text_embedder.linear_1", cfg.text_dim, D);
  m->text_2_ = Linear::load(w, "condition_embedder.text_embedder.linear_2", D, D);
  if (const int64_t I = cfg.image_dim) {
    const std::string e = "condition_embedder.image_embedder.";
    if (cfg.pos_embed_seq_len) m->image_pos_ = kept.take(e + "pos_embed", {1, cfg.pos_embed_seq_len, I});
    m->image_norm1_ = LayerNorm::load(kept, e + "norm1", I, 1e-5, true);
    m->image_1_ = Linear::load(w, e + "ff.net.0.proj", I, I);
    m->image_2_ = Linear::load(w, e + "ff.net.2", I, D);
    m->image_norm2_ = LayerNorm::load(kept, e + "norm2", D, 1e-5, true);
    for (auto* n : {&m->image_norm1_, &m->image_norm2_})  // FP32LayerNorm
      n->weight = n->weight.to(at::kFloat), n->bias = n->bias.to(at::kFloat);
  }
  for (int i = 0; i < cfg.num_layers; ++i) {
    const std::string b = "blocks." + std::to_string(i) + ".";
    m->blocks_.emplace_back();
    if (!range.holds(size_t(i))) {
      for (const auto& name : weights.names())
        if (name.rfind(b, 0) == 0) ignorable.insert(name);
      m->block_loaded();
      continue;
    }
    auto attention = [&](const std::string& a) {
      return Attention{Linear::load(w, a + ".to_q", D, D), Linear::load(w, a + ".to_k", D, D),
                       Linear::load(w, a + ".to_v", D, D), Linear::load(w, a + ".to_out.0", D, D),
                       RmsNorm::load(w, a + ".norm_q", D, cfg.eps), RmsNorm::load(w, a + ".norm_k", D, cfg.eps)};
    };
    auto& block = m->blocks_.back();
    block.self = attention(b + "attn1");
    block.cross = attention(b + "attn2");
    if (cfg.added_kv_proj_dim) {
      block.cross.add_k = Linear::load(w, b + "attn2.add_k_proj", cfg.added_kv_proj_dim, D);
      block.cross.add_v = Linear::load(w, b + "attn2.add_v_proj", cfg.added_kv_proj_dim, D);
      block.cross.norm_added_k = RmsNorm::load(w, b + "attn2.norm_added_k", D, cfg.eps);
    }
    if (cfg.cross_attn_norm) {
      block.norm2 = LayerNorm::load(kept, b + "norm2", D, cfg.eps, true);
      block.norm2.weight = block.norm2.weight.to(at::kFloat);  // FP32LayerNorm
      block.norm2.bias = block.norm2.bias.to(at::kFloat);
    }
    block.ff_in = Linear::load(w, b + "ffn.net.0.proj", D, ffn);
    block.ff_out = Linear::load(w, b + "ffn.net.2", ffn, D);
    block.modulation = kept.take(b + "scale_shift_table", {1, 6, D});
    m->block_loaded();
  }
  m->proj_out_ = Linear::load(w, "proj_out", D, int64_t(cfg.out_channels) * cfg.patch_volume());
  m->out_modulation_ = kept.take("scale_shift_table", {1, 2, D});
  weights.expect_all_taken(ignorable);
  return m;
}

void WanTransformer::check_inputs(const at::Tensor& l, const at::Tensor& t, const char* text_name) const {
  auto shape = [](const at::Tensor& x) { return io::shape_str(x.sizes().vec()); };
  const auto& p = cfg_.patch_size;
  bool fits = l.dim() == 5 && l.size(1) == cfg_.out_channels;
  for (int a = 0; fits && a < 3; ++a)
    fits = l.size(2 + a) % p[size_t(a)] == 0 && l.size(2 + a) / p[size_t(a)] <= cfg_.rope_max_seq_len;
  if (!fits)
    throw InputError("latents have shape " + shape(l) + "; the model needs [B, " + std::to_string(cfg_.out_channels) +
                     ", F, H, W] with F, H, W multiples of patch_size " + io::shape_str({p[0], p[1], p[2]}) +
                     " and at most rope_max_seq_len " + std::to_string(cfg_.rope_max_seq_len) +
                     " patches each (transformer/config.json)");
  if (t.dim() != 3 || t.size(0) != l.size(0) || t.size(2) != cfg_.text_dim)
    throw InputError(std::string(text_name) + " has shape " + shape(t) + "; the model needs [" +
                     std::to_string(l.size(0)) + ", T, " + std::to_string(cfg_.text_dim) +
                     "] (batch of the latents, text_dim of transformer/config.json)");
}

TokenGrid WanTransformer::token_grid(const at::Tensor& latents) const {
  const auto& p = cfg_.patch_size;
  return {int(latents.size(2) / p[0]), int(latents.size(3) / p[1]), int(latents.size(4) / p[2])};
}

Positions WanTransformer::positions(const TokenGrid& grid) const {
  auto pos = wan_positions(cfg_, grid);
  pos.rope_cos = pos.rope_cos.to(device_);
  pos.rope_sin = pos.rope_sin.to(device_);
  return pos;
}

std::vector<int64_t> WanTransformer::output_shape(const at::Tensor& l) const {
  return {l.size(0), cfg_.out_channels, l.size(2), l.size(3), l.size(4)};
}

Conditioning WanTransformer::condition(const StepInputs& in) const {
  // TI2V with a picture: the tokens of its latent frame take timestep 0, the others the step's (diffusers
  // embeds a timestep per token; the distinct ones are embedded here, each token picking its row).
  const bool picture = cfg_.expand_timesteps && in.condition.defined();
  auto timestep = in.timestep.to(device_);
  if (picture) timestep = at::stack({timestep, at::zeros_like(timestep)}, 1).flatten();
  const auto sinusoid = timestep_embedding(timestep, cfg_.freq_dim, true, 0);
  const auto temb = time_2_(at::silu(time_1_(sinusoid.to(time_1_.dtype)))).to(dtype_);
  Conditioning c{time_proj_(at::silu(temb)), temb, in.image.defined() ? in.image.size(1) : 0};
  if (picture) {
    c.embedding = c.embedding.unflatten(0, {-1, 2});
    c.head = c.head.unflatten(0, {-1, 2});
    const auto grid = token_grid(in.latents);
    c.token_rows = at::zeros({grid.tokens()}, at::TensorOptions(at::kLong).device(device_));
    c.token_rows.narrow(0, 0, int64_t(grid.rows) * grid.cols).fill_(1);  // latent frame 0's tokens
  }
  return c;
}

Tokens WanTransformer::embed(const StepInputs& in, const Positions&) const {
  const auto& p = cfg_.patch_size;
  const auto input = !cfg_.expand_timesteps ? join_condition(in, cfg_.in_channels - cfg_.out_channels, 1)
                     : in.condition.defined() ? replace_first_frame(in.latents, in.condition)
                                              : in.latents;
  if (bool(cfg_.image_dim) != in.image.defined())
    throw InputError(cfg_.image_dim ? "this model needs the picture's image tokens (image_encoder/)"
                                    : "this model has no image embedding (transformer/config.json: image_dim null)");
  const auto patches = at::conv3d(input.to(device_, dtype_), patch_weight_, patch_bias_, {p[0], p[1], p[2]});
  auto text = text_2_(at::gelu(text_1_(in.text.to(device_, dtype_)), "tanh"));
  if (in.image.defined()) {
    auto image = in.image.to(device_, at::kFloat);
    if (image_pos_.defined()) {  // FLF2V: the first and the last picture's tokens, one sequence
      if (image.size(1) != image_pos_.size(1))
        throw InputError("this model's image tokens need a first and a last picture (--image and --last_image): " +
                         std::to_string(image_pos_.size(1)) + " tokens, not " + std::to_string(image.size(1)));
      image = image + image_pos_;
    }
    image = image_norm1_(image).to(dtype_);
    image = image_2_(at::gelu(image_1_(image)));
    text = at::cat({image_norm2_(image.to(at::kFloat)).to(dtype_), text}, 1);
  }
  return {patches.flatten(2).transpose(1, 2), text};
}

at::Tensor WanTransformer::heads(const at::Tensor& x) const {
  return x.unflatten(-1, {cfg_.num_attention_heads, cfg_.attention_head_dim}).transpose(1, 2);
}

std::vector<at::Tensor> WanTransformer::block_tensors(size_t i) const {
  const auto& b = blocks_.at(i);
  return tensors_of(b.self.q, b.self.k, b.self.v, b.self.out, b.self.norm_q, b.self.norm_k, b.cross.q, b.cross.k,
                    b.cross.v, b.cross.out, b.cross.norm_q, b.cross.norm_k, b.cross.add_k, b.cross.add_v,
                    b.cross.norm_added_k, b.norm2, b.ff_in, b.ff_out, b.modulation);
}

void WanTransformer::block_forward(size_t i, Tokens& x, const Conditioning& c, const at::Tensor& cos,
                               const at::Tensor& sin, const AttentionFn& attention) const {
  if (!range_.holds(i))
    throw std::logic_error("internal error: block " + std::to_string(i) + " is another PipeFusion stage's");
  const auto& b = blocks_[i];
  // shift, scale, gate for the self-attention, then for the feed-forward: [B, 1, width] each (or per token),
  // float32.
  auto m = (b.modulation + c.embedding.unflatten(-1, {6, width()}).to(at::kFloat)).chunk(6, -2);
  for (auto& v : m) v = for_tokens(v, c);
  auto& h = x.latent;
  const double eps = cfg_.eps;

  const auto n1 = modulate(layer_norm32(h, eps), m[0], m[1], dtype_);
  const Rotation rope{cos, sin};
  const auto q = rotate(heads(b.self.norm_q(b.self.q(n1))), rope), k = rotate(heads(b.self.norm_k(b.self.k(n1))), rope);
  const auto self = b.self.out(attention(q, k, heads(b.self.v(n1))).transpose(1, 2).flatten(2));
  h = (h.to(at::kFloat) + self * m[2]).to(dtype_);

  const auto n2 = cfg_.cross_attn_norm ? b.norm2(h.to(at::kFloat)).to(dtype_) : h;
  const auto cq = heads(b.cross.norm_q(b.cross.q(n2)));
  const auto text = x.text.narrow(1, c.image_tokens, x.text.size(1) - c.image_tokens);
  const auto ck = heads(b.cross.norm_k(b.cross.k(text))), cv = heads(b.cross.v(text));
  auto cross = compat::attention(cq, ck, cv);
  if (c.image_tokens) {
    const auto image = x.text.narrow(1, 0, c.image_tokens);
    cross = cross + compat::attention(cq, heads(b.cross.norm_added_k(b.cross.add_k(image))), heads(b.cross.add_v(image)));
  }
  h = h + b.cross.out(cross.transpose(1, 2).flatten(2));

  const auto n3 = modulate(layer_norm32(h, eps), m[3], m[4], dtype_);
  const auto ff = b.ff_out(b.ff_in.gelu_tanh(n3));
  h = (h.to(at::kFloat) + ff.to(at::kFloat) * m[5]).to(dtype_);
}

ChangeIndicator WanTransformer::teacache_indicator(const Tokens&, const Conditioning& c) const {
  return {c.head, false};
}

at::Tensor WanTransformer::project_out(const at::Tensor& latent, const Conditioning& c) const {
  const auto m = (out_modulation_ + c.head.unsqueeze(-2)).chunk(2, -2);  // shift, scale
  return proj_out_(modulate(layer_norm32(latent, cfg_.eps), for_tokens(m[0], c), for_tokens(m[1], c), dtype_));
}

at::Tensor WanTransformer::final_latents(const at::Tensor& latents, const at::Tensor& condition) const {
  return cfg_.expand_timesteps && condition.defined() ? replace_first_frame(latents, condition) : latents;
}

at::Tensor WanTransformer::unpatchify(const at::Tensor& patches, const at::Tensor& l) const {
  const auto& p = cfg_.patch_size;
  const int64_t B = l.size(0), F = l.size(2) / p[0], H = l.size(3) / p[1], W = l.size(4) / p[2];
  return patches.reshape({B, F, H, W, p[0], p[1], p[2], cfg_.out_channels})
      .permute({0, 7, 1, 4, 2, 5, 3, 6})
      .reshape({B, cfg_.out_channels, l.size(2), l.size(3), l.size(4)});
}

}  // namespace studio::models

#include "models/flux/flux_transformer.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/addcmul.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/silu.h>

#include <set>
#include <stdexcept>

#include "io/safetensors/safetensors_file.h"
#include "models/layers/positions.h"
#include "plan/error.h"

namespace studio::models {

namespace {

constexpr double kNormEps = 1e-6;

at::Tensor layer_norm(const at::Tensor& x) { return at::layer_norm(x, {x.size(-1)}, {}, {}, kNormEps); }

// Rows [from, from + n) of dim 1.
at::Tensor rows(const at::Tensor& x, int64_t from, int64_t n) { return x.narrow(1, from, n); }

}  // namespace

at::Tensor pack_latents(const at::Tensor& l) {
  const int64_t B = l.size(0), C = l.size(1), H = l.size(2), W = l.size(3);
  return l.view({B, C, H / 2, 2, W / 2, 2}).permute({0, 2, 4, 1, 3, 5}).reshape({B, (H / 2) * (W / 2), C * 4});
}

at::Tensor unpack_latents(const at::Tensor& p, int64_t height, int64_t width) {
  const int64_t B = p.size(0), C = p.size(2) / 4;
  return p.reshape({B, height / 2, width / 2, C, 2, 2}).permute({0, 3, 1, 4, 2, 5}).reshape({B, C, height, width});
}

Positions flux_positions(const plan::FluxTransformerConfig& cfg, const TokenGrid& grid) {
  // As diffusers' FluxPosEmbed: ids (0, row, col), frequencies in float64.
  auto [cos, sin] = axial_rope(1, grid.rows, grid.cols, cfg.axes_dims_rope, 10000.0, at::kDouble);
  return {{}, cos, sin};
}

std::shared_ptr<FluxTransformer> FluxTransformer::load(const std::string& part_dir,
                                                       const plan::FluxTransformerConfig& cfg, at::ScalarType dtype,
                                                       at::Device device, BlockRange range,
                                                       std::shared_ptr<BlockWeights> block_weights) {
  auto weights = io::WeightSet::open(part_dir, "diffusion_pytorch_model");
  return load(weights, cfg, dtype, device, range, std::move(block_weights));
}

std::shared_ptr<FluxTransformer> FluxTransformer::load(io::WeightSet& weights, const plan::FluxTransformerConfig& cfg,
                                                       at::ScalarType dtype, at::Device device, BlockRange range,
                                                       std::shared_ptr<BlockWeights> block_weights) {
  WeightSource w{weights, dtype, device};
  auto m = std::make_shared<FluxTransformer>();
  m->set_block_weights(std::move(block_weights));
  m->cfg_ = cfg;
  m->dtype_ = dtype;
  m->device_ = device;
  m->range_ = range;
  const int64_t D = cfg.inner_dim(), hd = cfg.attention_head_dim, mlp = 4 * D;
  std::set<std::string> elsewhere;  // the weights of blocks another PipeFusion stage holds
  auto held = [&](size_t index, const std::string& prefix) {
    if (range.holds(index)) return true;
    for (const auto& name : weights.names())
      if (name.rfind(prefix, 0) == 0) elsewhere.insert(name);
    return false;
  };
  m->x_embedder_ = Linear::load(w, "x_embedder", cfg.in_channels, D);
  m->context_embedder_ = Linear::load(w, "context_embedder", cfg.joint_attention_dim, D);
  auto embedder = [&](const std::string& p, int64_t in) {
    return Embedder{Linear::load(w, p + ".linear_1", in, D), Linear::load(w, p + ".linear_2", D, D)};
  };
  m->time_ = embedder("time_text_embed.timestep_embedder", 256);
  if (cfg.guidance_embeds) m->guidance_ = embedder("time_text_embed.guidance_embedder", 256);
  m->text_ = embedder("time_text_embed.text_embedder", cfg.pooled_projection_dim);
  for (int i = 0; i < cfg.num_layers; ++i) {
    const std::string b = "transformer_blocks." + std::to_string(i) + ".";
    if (!held(size_t(i), b)) {
      m->doubles_.emplace_back();
      m->block_loaded();
      continue;
    }
    m->doubles_.push_back(DualStreamBlock::load(w, b, D, hd, mlp));
    m->block_loaded();
  }
  for (int i = 0; i < cfg.num_single_layers; ++i) {
    const std::string b = "single_transformer_blocks." + std::to_string(i) + ".";
    if (!held(size_t(cfg.num_layers + i), b)) {
      m->singles_.emplace_back();
      m->block_loaded();
      continue;
    }
    m->singles_.push_back({Linear::load(w, b + "norm.linear", D, 3 * D), Linear::load(w, b + "attn.to_q", D, D),
                           Linear::load(w, b + "attn.to_k", D, D), Linear::load(w, b + "attn.to_v", D, D),
                           Linear::load(w, b + "proj_mlp", D, mlp), Linear::load(w, b + "proj_out", D + mlp, D),
                           RmsNorm::load(w, b + "attn.norm_q", hd, kNormEps),
                           RmsNorm::load(w, b + "attn.norm_k", hd, kNormEps)});
    m->block_loaded();
  }
  m->norm_out_ = Linear::load(w, "norm_out.linear", D, 2 * D);
  m->proj_out_ = Linear::load(w, "proj_out", D, cfg.out_channels);
  weights.expect_all_taken(elsewhere);
  return m;
}

void FluxTransformer::check_inputs(const at::Tensor& l, const at::Tensor& t, const char* text_name) const {
  auto shape = [](const at::Tensor& x) { return io::shape_str(x.sizes().vec()); };
  const int64_t C = cfg_.in_channels / 4;
  if (l.dim() != 4 || l.size(1) != C || l.size(2) % 2 || l.size(3) % 2)
    throw InputError("latents have shape " + shape(l) + "; the model needs [B, " + std::to_string(C) +
                     ", h, w] with h and w even (packed 2x2 into in_channels " + std::to_string(cfg_.in_channels) +
                     ")");
  if (t.dim() != 3 || t.size(0) != l.size(0) || t.size(2) != cfg_.joint_attention_dim)
    throw InputError(std::string(text_name) + " has shape " + shape(t) + "; the model needs [" +
                     std::to_string(l.size(0)) + ", T, " + std::to_string(cfg_.joint_attention_dim) +
                     "] (batch of the latents, joint_attention_dim of transformer/config.json)");
}

TokenGrid FluxTransformer::token_grid(const at::Tensor& latents) const {
  return {1, int(latents.size(2) / 2), int(latents.size(3) / 2)};
}

Positions FluxTransformer::positions(const TokenGrid& grid) const {
  auto pos = flux_positions(cfg_, grid);
  pos.rope_cos = pos.rope_cos.to(device_);
  pos.rope_sin = pos.rope_sin.to(device_);
  return pos;
}

std::vector<int64_t> FluxTransformer::output_shape(const at::Tensor& latents) const {
  return {latents.size(0), cfg_.out_channels / 4, latents.size(2), latents.size(3)};
}

at::Tensor FluxTransformer::Embedder::operator()(const at::Tensor& x) const { return linear_2(at::silu(linear_1(x))); }

Conditioning FluxTransformer::condition(const StepInputs& in) const {
  // The model is given t / 1000 and the raw guidance scale, and scales both by 1000 itself.
  auto embed_scalar = [&](const Embedder& e, const at::Tensor& v) {
    const auto scaled = v.to(device_, dtype_) * 1000;
    return e(timestep_embedding(scaled, 256, true, 0).to(dtype_));
  };
  auto c = embed_scalar(time_, in.timestep);
  if (cfg_.guidance_embeds) {
    if (!in.guidance.defined()) throw InputError("FLUX.1-dev needs a guidance scale (its guidance embedding)");
    c = c + embed_scalar(guidance_, in.guidance);
  }
  if (!in.pooled.defined() || in.pooled.dim() != 2 || in.pooled.size(0) != in.timestep.size(0) ||
      in.pooled.size(1) != cfg_.pooled_projection_dim)
    throw InputError("FLUX needs pooled_prompt_embeds [B, " + std::to_string(cfg_.pooled_projection_dim) +
                     "] (CLIP's pooled output, pooled_projection_dim of transformer/config.json) beside prompt_embeds" +
                     (in.pooled.defined() ? "; it has shape " + io::shape_str(in.pooled.sizes().vec()) : std::string()));
  return {c + text_(in.pooled.to(device_, dtype_))};
}

Tokens FluxTransformer::embed(const StepInputs& in, const Positions&) const {
  return {x_embedder_(pack_latents(in.latents.to(device_, dtype_))), context_embedder_(in.text.to(device_, dtype_))};
}

at::Tensor FluxTransformer::heads(const at::Tensor& x) const {
  return x.unflatten(-1, {cfg_.num_attention_heads, cfg_.attention_head_dim}).transpose(1, 2);
}

std::vector<at::Tensor> FluxTransformer::block_tensors(size_t i) const {
  if (i < doubles_.size()) return doubles_[i].tensors();
  const auto& b = singles_.at(i - doubles_.size());
  return tensors_of(b.modulation, b.q, b.k, b.v, b.proj_mlp, b.proj_out, b.norm_q, b.norm_k);
}

void FluxTransformer::block_forward(size_t i, Tokens& x, const Conditioning& c, const at::Tensor& cos,
                                const at::Tensor& sin, const AttentionFn& attention) const {
  if (!range_.holds(i))
    throw std::logic_error("internal error: block " + std::to_string(i) + " is another PipeFusion stage's");
  const auto act = at::silu(c.embedding);
  if (i < doubles_.size()) {
    doubles_[i](x, act, cos, sin, attention, cfg_.attention_head_dim);
    if (dtype_ == at::kHalf) x.text = x.text.clamp(-65504, 65504);  // as diffusers keeps float16 finite
    return;
  }
  run_single(singles_[i - doubles_.size()], x, act, cos, sin, attention);
}

// TeaCache4FLUX: the first (double-stream) block's AdaLayerNormZero output for the latent rows, before
// its attention.
ChangeIndicator FluxTransformer::teacache_indicator(const Tokens& x, const Conditioning& c) const {
  if (doubles_.empty() || !range_.holds(0))
    throw std::logic_error("internal error: TeaCache needs the first double-stream block");
  return {doubles_[0].modulated_latent(x.latent, at::silu(c.embedding)), true};
}

void FluxTransformer::run_single(const SingleBlock& b, Tokens& x, const at::Tensor& act, const at::Tensor& cos,
                                 const at::Tensor& sin, const AttentionFn& attention) const {
  const int64_t T = x.text.size(1);
  const auto joint = at::cat({x.text, x.latent}, 1);
  const auto m = b.modulation(act).unsqueeze(1).chunk(3, -1);  // shift, scale, gate
  const auto n = at::addcmul(m[0], layer_norm(joint), 1 + m[1]);
  const Rotation rope{cos, sin, T};  // the image rows
  const auto q = b.norm_q(heads(b.q(n)), rope), k = b.norm_k(heads(b.k(n)), rope);
  const auto attn = attention(q, k, heads(b.v(n))).transpose(1, 2).flatten(2);
  const auto mlp = b.proj_mlp.gelu_tanh(n);
  auto out = at::addcmul(joint, m[2], b.proj_out(at::cat({attn, mlp}, 2)));
  if (dtype_ == at::kHalf) out = out.clamp(-65504, 65504);
  x.text = rows(out, 0, T);
  x.latent = rows(out, T, out.size(1) - T);
}

at::Tensor FluxTransformer::project_out(const at::Tensor& latent, const Conditioning& c) const {
  const auto m = norm_out_(at::silu(c.embedding)).unsqueeze(1).chunk(2, -1);  // scale, then shift
  return proj_out_(at::addcmul(m[1], layer_norm(latent), 1 + m[0]));
}

at::Tensor FluxTransformer::unpatchify(const at::Tensor& patches, const at::Tensor& latents) const {
  return unpack_latents(patches, latents.size(2), latents.size(3));
}

}  // namespace studio::models

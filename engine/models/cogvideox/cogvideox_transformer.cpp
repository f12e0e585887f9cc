#include "models/cogvideox/cogvideox_transformer.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/addcmul.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/conv2d.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/silu.h>

#include <set>
#include <stdexcept>

#include "io/safetensors/safetensors_file.h"
#include "models/cogvideox/cogvideox_positions.h"
#include "models/condition.h"
#include "models/layers/positions.h"
#include "plan/error.h"

namespace studio::models {

std::shared_ptr<CogVideoXTransformer> CogVideoXTransformer::load(const std::string& part_dir,
                                                                 const plan::CogVideoXTransformerConfig& cfg,
                                                                 at::ScalarType dtype, at::Device device,
                                                                 BlockRange range,
                                                                 std::shared_ptr<BlockWeights> block_weights) {
  auto weights = io::WeightSet::open(part_dir, "diffusion_pytorch_model");
  return load(weights, cfg, dtype, device, range, std::move(block_weights));
}

std::shared_ptr<CogVideoXTransformer> CogVideoXTransformer::load(io::WeightSet& weights,
                                                                 const plan::CogVideoXTransformerConfig& cfg,
                                                                 at::ScalarType dtype, at::Device device,
                                                                 BlockRange range,
                                                                 std::shared_ptr<BlockWeights> block_weights) {
  WeightSource w{weights, dtype, device};
  auto m = std::make_shared<CogVideoXTransformer>();
  m->set_block_weights(std::move(block_weights));
  m->cfg_ = cfg;
  m->dtype_ = dtype;
  m->device_ = device;
  m->range_ = range;
  const int64_t D = cfg.inner_dim(), E = cfg.time_embed_dim, p = cfg.patch_size, C = cfg.in_channels;
  const int64_t hd = cfg.attention_head_dim;
  const bool affine = cfg.norm_elementwise_affine;
  const std::string dims = "num_attention_heads x attention_head_dim = " + std::to_string(D);

  if (cfg.patch_size_t) {
    m->patch_proj_ = Linear::load(w, "patch_embed.proj", C * p * p * *cfg.patch_size_t, D);
  } else {
    m->patch_proj_.weight = w.take("patch_embed.proj.weight", {D, C, p, p}, dims + ", in_channels, patch_size");
    if (cfg.patch_bias) m->patch_proj_.bias = w.take("patch_embed.proj.bias", {D}, dims);
  }
  m->text_proj_ = Linear::load(w, "patch_embed.text_proj", cfg.text_embed_dim, D);
  m->time_1_ = Linear::load(w, "time_embedding.linear_1", D, E);
  m->time_2_ = Linear::load(w, "time_embedding.linear_2", E, E);
  if (cfg.ofs_embed_dim) {
    m->ofs_1_ = Linear::load(w, "ofs_embedding.linear_1", cfg.ofs_embed_dim, cfg.ofs_embed_dim);
    m->ofs_2_ = Linear::load(w, "ofs_embedding.linear_2", cfg.ofs_embed_dim, cfg.ofs_embed_dim);
  }
  if (cfg.use_learned_positional_embeddings)
    m->learned_pos_ = w.take("patch_embed.pos_embedding", {1, cfg.max_text_seq_length + cfg.sample_tokens(), D},
                             "max_text_seq_length + the sample size's video tokens, inner dim")
                          .squeeze(0);
  std::set<std::string> elsewhere;  // the weights of blocks another PipeFusion stage holds
  for (int i = 0; i < cfg.num_layers; ++i) {
    const std::string b = "transformer_blocks." + std::to_string(i) + ".";
    Block blk;
    if (!range.holds(size_t(i))) {
      for (const auto& name : weights.names())
        if (name.rfind(b, 0) == 0) elsewhere.insert(name);
      m->blocks_.push_back(std::move(blk));
      m->block_loaded();
      continue;
    }
    for (auto [norm, name] : {std::pair{&blk.norm1, "norm1"}, std::pair{&blk.norm2, "norm2"}}) {
      norm->linear = Linear::load(w, b + name + ".linear", E, 6 * D);
      norm->norm = LayerNorm::load(w, b + name + ".norm", D, cfg.norm_eps, affine);
    }
    // q, k and v as one matrix: one GEMM reads the normalised tokens once instead of three times.
    std::vector<Linear> qkv;
    for (const char* part : {"attn1.to_q", "attn1.to_k", "attn1.to_v"})
      qkv.push_back(Linear::load(w, b + part, D, D, cfg.attention_bias));
    blk.to_qkv = fuse_outputs(qkv);
    blk.to_out = Linear::load(w, b + "attn1.to_out.0", D, D);
    blk.norm_q = LayerNorm::load(w, b + "attn1.norm_q", hd, 1e-6, true);
    blk.norm_k = LayerNorm::load(w, b + "attn1.norm_k", hd, 1e-6, true);
    blk.ff_in = Linear::load(w, b + "ff.net.0.proj", D, 4 * D);
    blk.ff_out = Linear::load(w, b + "ff.net.2", 4 * D, D);
    m->blocks_.push_back(std::move(blk));
    m->block_loaded();
  }
  m->norm_final_ = LayerNorm::load(w, "norm_final", D, cfg.norm_eps, affine);
  m->norm_out_linear_ = Linear::load(w, "norm_out.linear", E, 2 * D);
  m->norm_out_norm_ = LayerNorm::load(w, "norm_out.norm", D, cfg.norm_eps, affine);
  const int64_t out_dim = p * p * cfg.patch_size_t.value_or(1) * cfg.out_channels;
  m->proj_out_ = Linear::load(w, "proj_out", D, out_dim);
  weights.expect_all_taken(elsewhere);
  return m;
}

void CogVideoXTransformer::check_inputs(const at::Tensor& l, const at::Tensor& t, const char* text_name) const {
  const auto& c = cfg_;
  auto shape = [](const at::Tensor& x) { return io::shape_str(x.sizes().vec()); };
  if (l.dim() != 5 || l.size(2) != c.out_channels || l.size(3) % c.patch_size || l.size(4) % c.patch_size ||
      l.size(1) % c.patch_size_t.value_or(1))
    throw InputError("latents have shape " + shape(l) + "; the model needs [B, F, " + std::to_string(c.out_channels) +
                     ", H, W] with H and W multiples of patch_size " + std::to_string(c.patch_size) +
                     (c.patch_size_t ? " and F a multiple of patch_size_t " + std::to_string(*c.patch_size_t) : ""));
  if (t.dim() != 3 || t.size(0) != l.size(0) || t.size(2) != c.text_embed_dim)
    throw InputError(std::string(text_name) + " has shape " + shape(t) + "; the model needs [" + std::to_string(l.size(0)) +
                     ", T, " + std::to_string(c.text_embed_dim) +
                     "] (batch of the latents, text_embed_dim of transformer/config.json)");
  // The 2B model adds one position table over max_text_seq_length text slots + the video tokens.
  if ((!c.use_rotary_positional_embeddings || c.use_learned_positional_embeddings) && t.size(1) != c.max_text_seq_length)
    throw InputError(std::string(text_name) + " has " + std::to_string(t.size(1)) + " text tokens; this model (" +
                     (c.use_learned_positional_embeddings ? "learned" : "3D sin-cos") +
                     " positions) needs exactly max_text_seq_length = " + std::to_string(c.max_text_seq_length));
  if (c.use_learned_positional_embeddings && (l.size(3) != c.sample_height || l.size(4) != c.sample_width))
    throw InputError("latents have shape " + shape(l) + "; this model's learned positions cover " +
                     std::to_string(c.sample_height) + " x " + std::to_string(c.sample_width) +
                     " latent pixels only (sample_height, sample_width)");
}

TokenGrid CogVideoXTransformer::token_grid(const at::Tensor& latents) const {
  const int64_t pt = cfg_.patch_size_t.value_or(1), p = cfg_.patch_size;
  return {int((latents.size(1) + pt - 1) / pt), int(latents.size(3) / p), int(latents.size(4) / p)};
}

Positions CogVideoXTransformer::positions(const TokenGrid& grid) const {
  Positions pos;
  if (cfg_.use_rotary_positional_embeddings) {
    auto r = rope_3d(cfg_, grid);
    pos.rope_cos = r.cos.to(device_);
    pos.rope_sin = r.sin.to(device_);
  }
  // The learned table's video rows at the sample size; at another frame count diffusers computes the sin-cos
  // table instead (and adds nothing to the text).
  if (learned_at(grid))
    pos.additive = learned_pos_.narrow(0, cfg_.max_text_seq_length, cfg_.sample_tokens()).to(dtype_);
  else if (!cfg_.use_rotary_positional_embeddings || learned_pos_.defined())
    pos.additive = sincos_3d(cfg_, grid).to(device_, dtype_);
  return pos;
}

std::vector<int64_t> CogVideoXTransformer::output_shape(const at::Tensor& latents) const {
  auto s = latents.sizes().vec();
  s[2] = cfg_.out_channels;
  return s;
}

Conditioning CogVideoXTransformer::condition(const StepInputs& in) const {
  auto t = timestep_embedding(in.timestep.to(device_), cfg_.inner_dim(), cfg_.flip_sin_to_cos, cfg_.freq_shift);
  auto emb = time_2_(at::silu(time_1_(t.to(dtype_))));
  if (cfg_.ofs_embed_dim) {
    // CogVideoXImageToVideoPipeline always passes ofs = 2.0, one value for the whole batch.
    const auto ofs = at::full({1}, 2.0, at::TensorOptions(at::kFloat).device(device_));
    const auto o = timestep_embedding(ofs, cfg_.ofs_embed_dim, cfg_.flip_sin_to_cos, cfg_.freq_shift);
    emb = emb + ofs_2_(at::silu(ofs_1_(o.to(dtype_))));
  }
  return {emb};
}

// TeaCache4CogVideoX: the timestep embedding, the same on every sequence rank.
ChangeIndicator CogVideoXTransformer::teacache_indicator(const Tokens&, const Conditioning& c) const {
  return {c.embedding, false};
}

bool CogVideoXTransformer::learned_at(const TokenGrid& grid) const {
  return learned_pos_.defined() && grid.tokens() == cfg_.sample_tokens();
}

Tokens CogVideoXTransformer::embed(const StepInputs& in, const Positions& pos) const {
  // The noise's channels first, then the picture's latents.
  const auto hidden = join_condition(in, cfg_.in_channels - cfg_.out_channels, 2).to(device_, dtype_);
  const int64_t B = hidden.size(0), F = hidden.size(1), C = hidden.size(2), H = hidden.size(3), W = hidden.size(4);
  const int64_t p = cfg_.patch_size;
  at::Tensor video;
  if (cfg_.patch_size_t) {
    const int64_t pt = *cfg_.patch_size_t;
    video = hidden.permute({0, 1, 3, 4, 2})
                .reshape({B, F / pt, pt, H / p, p, W / p, p, C})
                .permute({0, 1, 3, 5, 7, 2, 4, 6})
                .flatten(4, 7)
                .flatten(1, 3);
    video = patch_proj_(video);
  } else {
    video = at::conv2d(hidden.reshape({B * F, C, H, W}), patch_proj_.weight, patch_proj_.bias, {p, p});
    video = video.view({B, F, video.size(1), -1}).transpose(2, 3).flatten(1, 2);
  }
  if (pos.additive.defined()) video = video + pos.additive;
  auto text = text_proj_(in.text.to(device_, dtype_));
  if (learned_at(token_grid(in.latents)))
    text = text + learned_pos_.narrow(0, 0, cfg_.max_text_seq_length).to(dtype_);
  return {video, text};
}

std::vector<at::Tensor> CogVideoXTransformer::block_tensors(size_t i) const {
  const auto& b = blocks_.at(i);
  return tensors_of(b.norm1.linear, b.norm1.norm, b.norm2.linear, b.norm2.norm, b.to_qkv, b.to_out, b.norm_q,
                    b.norm_k, b.ff_in, b.ff_out);
}

void CogVideoXTransformer::block_forward(size_t i, Tokens& x, const Conditioning& c, const at::Tensor& rope_cos,
                                     const at::Tensor& rope_sin, const AttentionFn& attention) const {
  if (!range_.holds(i))
    throw std::logic_error("internal error: block " + std::to_string(i) + " is another PipeFusion stage's");
  const Block& blk = blocks_[i];
  const int64_t T = x.text.size(1), heads = cfg_.num_attention_heads;
  const auto act = at::silu(c.embedding);
  // Six modulation parts: shift, scale, gate for video, then for text.
  // Text first, then video, written straight into one joint buffer (no concatenation pass).
  auto modulate = [&](const AdaNormZero& n) {
    auto m = n.linear(act).unsqueeze(1).chunk(6, -1);
    auto joint = at::empty({x.latent.size(0), T + x.latent.size(1), x.latent.size(2)}, x.latent.options());
    auto text = joint.narrow(1, 0, T), video = joint.narrow(1, T, x.latent.size(1));
    n.norm.modulate_into(text, x.text, m[3], m[4]);
    n.norm.modulate_into(video, x.latent, m[0], m[1]);
    return std::tuple{joint, m[2], m[5]};
  };
  // Gated residuals in one pass each; new tensors, as x's may be views of a caller's buffers.
  auto add_gated = [&](const at::Tensor& out, const at::Tensor& gate_t, const at::Tensor& gate_v) {
    x.text = at::addcmul(x.text, gate_t, out.narrow(1, 0, T));
    x.latent = at::addcmul(x.latent, gate_v, out.narrow(1, T, out.size(1) - T));
  };

  // The attention half in a scope of its own: its temporaries (the modulated input, q/k/v, the output) are
  // released before the feed-forward's, as Python releases them, so the peak stays near diffusers'
  // (docs/performance.md).
  {
    auto [joint, gate_v, gate_t] = modulate(blk.norm1);
    const auto qkv = blk.to_qkv(joint).unflatten(-1, {3, heads, -1});  // [B, S, 3, heads, hd]
    const Rotation rope{rope_cos, rope_sin, T};  // the video rows
    auto heads_of = [&](int64_t part, const LayerNorm* norm) {
      const auto h = qkv.select(2, part).transpose(1, 2);  // [B, heads, S, hd]
      return norm ? (*norm)(h, rope) : h;
    };
    add_gated(blk.to_out(attention(heads_of(0, &blk.norm_q), heads_of(1, &blk.norm_k), heads_of(2, nullptr))
                             .transpose(1, 2)
                             .flatten(2)),
              gate_t, gate_v);
  }
  auto [joint2, gate_ff_v, gate_ff_t] = modulate(blk.norm2);
  add_gated(blk.ff_out(blk.ff_in.gelu_tanh(joint2)), gate_ff_t, gate_ff_v);
}

at::Tensor CogVideoXTransformer::project_out(const at::Tensor& latent, const Conditioning& c) const {
  auto h = norm_final_(latent);
  auto m = norm_out_linear_(at::silu(c.embedding)).unsqueeze(1).chunk(2, -1);  // shift, then scale
  h = norm_out_norm_(h) * (1 + m[1]) + m[0];
  return proj_out_(h);
}

at::Tensor CogVideoXTransformer::unpatchify(const at::Tensor& x, const at::Tensor& latents) const {
  const int64_t B = latents.size(0), F = latents.size(1), H = latents.size(3), W = latents.size(4);
  const int64_t p = cfg_.patch_size;
  if (!cfg_.patch_size_t)
    return x.reshape({B, F, H / p, W / p, -1, p, p}).permute({0, 1, 4, 2, 5, 3, 6}).flatten(5, 6).flatten(3, 4);
  const int64_t pt = *cfg_.patch_size_t;
  return x.reshape({B, (F + pt - 1) / pt, H / p, W / p, -1, pt, p, p})
      .permute({0, 1, 5, 4, 2, 6, 3, 7})
      .flatten(6, 7)
      .flatten(4, 5)
      .flatten(1, 2);
}

}  // namespace studio::models

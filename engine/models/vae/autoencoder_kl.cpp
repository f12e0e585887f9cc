#include "models/vae/autoencoder_kl.h"

#include <c10/core/InferenceMode.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/conv2d.h>
#include <ATen/ops/group_norm.h>
#include <ATen/ops/rsqrt.h>
#include <ATen/ops/silu.h>
#include <ATen/ops/upsample_nearest2d.h>

#include <optional>

#include "compat/torch_compat.h"
#include "io/safetensors/safetensors_file.h"
#include "models/vae/vae_tiling.h"
#include "plan/error.h"

namespace studio::models {

namespace {

constexpr double kEps = 1e-6;

}  // namespace

at::Tensor AutoencoderKL::GroupNorm::operator()(const at::Tensor& x, RowExchange* rows) const {
  // Statistics in float32 whatever the weights' dtype (bfloat16 sums drift over a large picture).
  const auto xf = x.to(at::kFloat);
  if (!rows) return at::group_norm(xf, groups, weight.to(at::kFloat), bias.to(at::kFloat), kEps).to(x.scalar_type());
  // The statistics of the whole picture, from every rank's rows.
  const int64_t B = x.size(0), C = x.size(1);
  const auto [mu, var] = group_mean_var(xf.reshape({B, groups, -1}), rows);
  const auto rstd = at::rsqrt(var + kEps);
  const auto y = ((xf.reshape({B, groups, -1}) - mu) * rstd).view(x.sizes());
  return (y * weight.to(at::kFloat).view({1, C, 1, 1}) + bias.to(at::kFloat).view({1, C, 1, 1})).to(x.scalar_type());
}

at::Tensor AutoencoderKL::Conv::operator()(const at::Tensor& x, RowExchange* rows) const {
  const int64_t pad = weight.size(-1) / 2;
  if (!rows || pad == 0) return at::conv2d(x, weight, bias, 1, pad);
  // The neighbours' adjacent rows stand where one process pads (zeros at the picture's edges).
  auto [above, below] = rows->halo(x.narrow(2, 0, 1), x.narrow(2, x.size(2) - 1, 1));
  return at::conv2d(at::cat({above, x, below}, 2), weight, bias, 1, at::IntArrayRef{0, pad});
}

at::Tensor AutoencoderKL::Resnet::operator()(const at::Tensor& x, RowExchange* rows) const {
  auto h = conv1(at::silu(norm1(x, rows)), rows);
  h = conv2(at::silu(norm2(h, rows)), rows);
  return (shortcut.weight.defined() ? shortcut(x, rows) : x) + h;
}

at::Tensor AutoencoderKL::Attention::operator()(const at::Tensor& x, RowExchange* rows) const {
  // One head over every position of the picture, the channels as its width; a residual around it.
  const int64_t B = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const auto h = norm(x, rows).view({B, C, H * W}).transpose(1, 2);  // [B, HW, C]
  auto keys = k(h), values = v(h);
  if (rows) keys = rows->gather(keys, 1), values = rows->gather(values, 1);
  const auto a = compat::attention(q(h).unsqueeze(1), keys.unsqueeze(1), values.unsqueeze(1)).squeeze(1);
  return out(a).transpose(1, 2).reshape({B, C, H, W}) + x;
}

std::shared_ptr<AutoencoderKL> AutoencoderKL::load(const std::string& part_dir, const plan::AutoencoderKLConfig& cfg,
                                                   at::ScalarType dtype, at::Device device) {
  auto weights = io::WeightSet::open(part_dir, "diffusion_pytorch_model");
  return load(weights, cfg, dtype, device);
}

std::shared_ptr<AutoencoderKL> AutoencoderKL::load(io::WeightSet& weights, const plan::AutoencoderKLConfig& cfg,
                                                   at::ScalarType dtype, at::Device device) {
  WeightSource w{weights, dtype, device};
  const int64_t g = cfg.norm_num_groups;
  auto norm = [&](const std::string& p, int64_t c) {
    return GroupNorm{w.take(p + ".weight", {c}), w.take(p + ".bias", {c}), g};
  };
  auto conv = [&](const std::string& p, int64_t in, int64_t out, int64_t k) {
    return Conv{w.take(p + ".weight", {out, in, k, k}), w.take(p + ".bias", {out})};
  };
  auto resnet = [&](const std::string& p, int64_t in, int64_t out) {
    Resnet r{norm(p + ".norm1", in), norm(p + ".norm2", out), conv(p + ".conv1", in, out, 3),
             conv(p + ".conv2", out, out, 3), {}};
    if (in != out) r.shortcut = conv(p + ".conv_shortcut", in, out, 1);
    return r;
  };
  auto m = std::make_shared<AutoencoderKL>();
  m->cfg_ = cfg;
  m->dtype_ = dtype;
  m->device_ = device;
  const std::vector<int64_t> ch(cfg.block_out_channels.rbegin(), cfg.block_out_channels.rend());
  m->conv_in_ = conv("decoder.conv_in", cfg.latent_channels, ch[0], 3);
  m->mid_first_ = resnet("decoder.mid_block.resnets.0", ch[0], ch[0]);
  if (cfg.mid_block_add_attention) {
    const std::string p = "decoder.mid_block.attentions.0";
    m->mid_attention_.push_back({norm(p + ".group_norm", ch[0]), Linear::load(w, p + ".to_q", ch[0], ch[0]),
                                 Linear::load(w, p + ".to_k", ch[0], ch[0]), Linear::load(w, p + ".to_v", ch[0], ch[0]),
                                 Linear::load(w, p + ".to_out.0", ch[0], ch[0])});
  }
  m->mid_second_ = resnet("decoder.mid_block.resnets.1", ch[0], ch[0]);
  int64_t prev = ch[0];
  for (size_t i = 0; i < ch.size(); ++i) {
    const std::string p = "decoder.up_blocks." + std::to_string(i);
    UpBlock blk;
    for (int j = 0; j <= cfg.layers_per_block; ++j)
      blk.resnets.push_back(resnet(p + ".resnets." + std::to_string(j), j == 0 ? prev : ch[i], ch[i]));
    if (i + 1 < ch.size()) blk.upsample = conv(p + ".upsamplers.0.conv", ch[i], ch[i], 3);
    m->up_blocks_.push_back(std::move(blk));
    prev = ch[i];
  }
  m->norm_out_ = norm("decoder.conv_norm_out", ch.back());
  m->conv_out_ = conv("decoder.conv_out", ch.back(), cfg.out_channels, 3);
  // The encoder is not used to generate; a folder may carry it or not.
  std::set<std::string> encoder;
  for (const auto& name : weights.names())
    if (name.rfind("encoder.", 0) == 0) encoder.insert(name);
  weights.expect_all_taken(encoder);
  return m;
}

at::Tensor AutoencoderKL::prepare(const at::Tensor& latents, int) const {
  return (latents / cfg_.scaling_factor + cfg_.shift_factor).unsqueeze(2);
}

at::Tensor AutoencoderKL::decode(const at::Tensor& z_in, RowExchange* rows, const DecodeProgress& progress) const {
  // Not with a row split: c10d's Gloo works on threads of its own, which cannot touch inference tensors.
  std::optional<c10::InferenceMode> guard;
  if (!rows) guard.emplace();
  if (z_in.dim() != 4 || z_in.size(1) != cfg_.latent_channels)
    throw InputError("VAE input has shape " + io::shape_str(z_in.sizes().vec()) + "; expected [B, " +
                     std::to_string(cfg_.latent_channels) + ", h, w]");
  auto h = conv_in_(z_in.to(device_, dtype_), rows);
  h = mid_first_(h, rows);
  for (const auto& a : mid_attention_) h = a(h, rows);
  h = mid_second_(h, rows);
  DecoderLevels levels{progress, int(up_blocks_.size()) + 2};
  levels.tell();
  for (const auto& blk : up_blocks_) {
    for (const auto& r : blk.resnets) h = r(h, rows);
    if (blk.upsample.weight.defined())
      h = blk.upsample(at::upsample_nearest2d(h, {h.size(2) * 2, h.size(3) * 2}), rows);
    levels.tell();
  }
  h = conv_out_(at::silu(norm_out_(h, rows)), rows).to(at::kFloat);
  levels.tell();
  return h;
}

void AutoencoderKL::decode_batches(const at::Tensor& z, const std::function<void(const at::Tensor&)>& on_batch,
                                   RowExchange* rows, const DecodeProgress& progress) const {
  on_batch(decode(z.squeeze(2), rows, progress).unsqueeze(2));
}

at::Tensor AutoencoderKL::decode_tiled(const at::Tensor& z, const TileOptions& tiles,
                                       const DecodeProgress& progress) const {
  // AutoencoderKL's tiles overlap by a quarter both ways (diffusers' tile_overlap_factor).
  return decode_in_tiles(z.squeeze(2), spatial_compression(), tiles, {0.25, 0.25},
                         [&](const at::Tensor& tile) { return decode(tile); }, progress)
      .unsqueeze(2);
}

}  // namespace studio::models

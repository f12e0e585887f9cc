#include "models/cogvideox/cogvideox_picture_encoder.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/clamp.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/conv2d.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/conv3d.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/group_norm.h>
#include <ATen/ops/rsqrt.h>
#include <ATen/ops/silu.h>
#include <c10/core/InferenceMode.h>

#include <optional>
#include <set>
#include <vector>

#include "models/layers/layers.h"
#include "models/vae/vae_tiling.h"
#include "plan/error.h"

namespace studio::models {

namespace {

// With a row split, this rank's rows and how it reaches the others (nullptr: this process has every row).
struct Rows {
  RowExchange* exchange = nullptr;
  // x [B, C, 1, h, W] with the neighbours' adjacent rows (`above`, `below`: whether each side is wanted);
  // zeros at the picture's edges, which is the zero padding one process adds there.
  at::Tensor with_halo(const at::Tensor& x, bool above, bool below) const {
    auto [up, down] = exchange->halo(x.narrow(3, 0, 1).contiguous(), x.narrow(3, x.size(3) - 1, 1).contiguous());
    std::vector<at::Tensor> parts;
    if (above) parts.push_back(up);
    parts.push_back(x);
    if (below) parts.push_back(down);
    return at::cat(parts, 3);
  }
};

// CogVideoXCausalConv3d on one frame: the frame repeated over the kernel's time (its "first" padding), zero
// padding in space; split by rows, a halo row each side stands for the padding between ranks.
struct CausalConv {
  at::Tensor weight, bias;
  at::Tensor operator()(const at::Tensor& x, const Rows& rows) const {
    const int64_t kt = weight.size(2), pad = weight.size(3) / 2;
    const auto in = rows.exchange && pad ? rows.with_halo(x, true, true) : x;
    return at::conv3d(in.expand({-1, -1, kt, -1, -1}), weight, bias, 1, {0, rows.exchange ? 0 : pad, pad});
  }
};

struct GroupNorm {  // nn.GroupNorm over channels, time, rows and columns; of the whole picture when split by rows
  at::Tensor weight, bias;
  int64_t groups = 32;
  double eps = 1e-6;
  at::Tensor operator()(const at::Tensor& x, const Rows& rows) const {
    if (!rows.exchange) return at::group_norm(x, groups, weight, bias, eps);
    const int64_t B = x.size(0), C = x.size(1);
    const auto [mean, var] = group_mean_var(x.reshape({B, groups, -1}), rows.exchange);
    const auto shape = x.sizes().vec();
    const auto y = ((x.reshape({B, groups, -1}).to(at::kFloat) - mean) * at::rsqrt(var + eps)).view(shape);
    return (y * weight.view({1, C, 1, 1, 1}) + bias.view({1, C, 1, 1, 1})).to(x.scalar_type());
  }
};

struct Resnet {  // CogVideoXResnetBlock3D without a time embedding or spatial norm
  GroupNorm norm1, norm2;
  CausalConv conv1, conv2;
  at::Tensor shortcut_w, shortcut_b;  // 1 x 1 x 1, when the channel count changes
  at::Tensor operator()(const at::Tensor& x, const Rows& rows) const {
    auto h = conv2(at::silu(norm2(conv1(at::silu(norm1(x, rows)), rows), rows)), rows);
    return h + (shortcut_w.defined() ? at::conv3d(x, shortcut_w, shortcut_b) : x);
  }
};

}  // namespace

struct CogVideoXPictureEncoder::Layers {
  CausalConv conv_in, conv_out;
  struct Down {
    std::vector<Resnet> resnets;
    at::Tensor down_w, down_b;  // a stride-2 3 x 3 convolution after zero padding right and below; not in the last
  };
  std::vector<Down> down_blocks;
  Resnet mid[2];
  GroupNorm norm_out;
};

std::shared_ptr<CogVideoXPictureEncoder> CogVideoXPictureEncoder::load(const std::string& part_dir,
                                                                       const plan::CogVideoXVaeConfig& cfg,
                                                                       at::ScalarType dtype, at::Device device) {
  auto weights = io::WeightSet::open(part_dir, "diffusion_pytorch_model");
  if (!weights.contains("encoder.conv_in.conv.weight"))
    throw InputError(part_dir + " holds no encoder weights (encoder.*): the picture cannot be encoded; use the "
                     "model's complete vae/ folder as the Hub has it");
  WeightSource w{weights, dtype, device};
  const int64_t g = cfg.norm_num_groups;
  const double eps = cfg.norm_eps;
  auto conv = [&](const std::string& p, int64_t in, int64_t out) {
    return CausalConv{w.take(p + ".conv.weight", {out, in, 3, 3, 3}), w.take(p + ".conv.bias", {out})};
  };
  auto norm = [&](const std::string& p, int64_t c) {
    return GroupNorm{w.take(p + ".weight", {c}), w.take(p + ".bias", {c}), g, eps};
  };
  auto resnet = [&](const std::string& p, int64_t in, int64_t out) {
    Resnet r{norm(p + ".norm1", in), norm(p + ".norm2", out), conv(p + ".conv1", in, out), conv(p + ".conv2", out, out),
             {}, {}};
    if (in != out) {
      r.shortcut_w = w.take(p + ".conv_shortcut.weight", {out, in, 1, 1, 1});
      r.shortcut_b = w.take(p + ".conv_shortcut.bias", {out});
    }
    return r;
  };
  auto l = std::make_shared<Layers>();
  const auto& ch = cfg.block_out_channels;
  l->conv_in = conv("encoder.conv_in", cfg.in_channels, ch[0]);
  int64_t in = ch[0];
  for (size_t i = 0; i < ch.size(); ++i) {
    const std::string p = "encoder.down_blocks." + std::to_string(i);
    Layers::Down blk;
    for (int j = 0; j < cfg.layers_per_block; ++j, in = ch[i])
      blk.resnets.push_back(resnet(p + ".resnets." + std::to_string(j), in, ch[i]));
    if (i + 1 < ch.size()) {
      blk.down_w = w.take(p + ".downsamplers.0.conv.weight", {ch[i], ch[i], 3, 3});
      blk.down_b = w.take(p + ".downsamplers.0.conv.bias", {ch[i]});
    }
    l->down_blocks.push_back(std::move(blk));
  }
  const int64_t c = ch.back();
  l->mid[0] = resnet("encoder.mid_block.resnets.0", c, c);
  l->mid[1] = resnet("encoder.mid_block.resnets.1", c, c);
  l->norm_out = norm("encoder.norm_out", c);  // nn.GroupNorm(eps=1e-6) whatever norm_eps says
  l->norm_out.eps = 1e-6;
  l->conv_out = conv("encoder.conv_out", c, 2 * int64_t(cfg.latent_channels));
  // The decoder's weights are the decoder's to read.
  std::set<std::string> decoder;
  for (const auto& name : weights.names())
    if (name.rfind("encoder.", 0) != 0) decoder.insert(name);
  weights.expect_all_taken(decoder);
  auto e = std::make_shared<CogVideoXPictureEncoder>();
  e->cfg_ = cfg;
  e->dtype_ = dtype;
  e->device_ = device;
  e->layers_ = l;
  return e;
}

at::Tensor CogVideoXPictureEncoder::moments_tiled(const at::Tensor& picture, const TileOptions& tiles,
                                                  const DecodeProgress& progress) const {
  const bool whole = picture.size(-2) <= tiles.sample_height && picture.size(-1) <= tiles.sample_width;
  return encode_in_tiles(picture, cfg_.spatial_compression, tiles, {1.0 / 6, 1.0 / 5},
                         [&](const at::Tensor& tile) { return moments(tile); }, whole, progress);
}

at::Tensor CogVideoXPictureEncoder::moments(const at::Tensor& picture, const RowShare* share) const {
  // Not with a row split: c10d's Gloo works on threads of its own, which cannot touch inference tensors.
  std::optional<c10::InferenceMode> guard;
  if (!share) guard.emplace();
  const int64_t s = cfg_.spatial_compression;
  if (picture.dim() != 4 || picture.size(1) != cfg_.in_channels || picture.size(2) % s || picture.size(3) % s)
    throw InputError("VAE encoder input has shape " + io::shape_str(picture.sizes().vec()) + "; expected [B, " +
                     std::to_string(cfg_.in_channels) + ", H, W] with H and W multiples of " + std::to_string(s));
  Rows rows;
  at::Tensor mine = picture;
  if (share) {
    mine = rows_of_share(picture, 2, s, *share);
    rows.exchange = share->exchange;
  }
  const auto& l = *layers_;
  auto x = l.conv_in(mine.to(device_, dtype_).unsqueeze(2), rows);
  for (const auto& blk : l.down_blocks) {
    for (const auto& r : blk.resnets) x = r(x, rows);
    if (!blk.down_w.defined()) continue;
    // One frame: halving time keeps it; then the spatial halving, zero padding right and below (split by
    // rows: the next rank's first row below).
    const auto in = rows.exchange ? at::constant_pad_nd(rows.with_halo(x, false, true).squeeze(2), {0, 1})
                                  : at::constant_pad_nd(x.squeeze(2), {0, 1, 0, 1});
    x = at::conv2d(in, blk.down_w, blk.down_b, 2).unsqueeze(2);
  }
  x = l.mid[1](l.mid[0](x, rows), rows);
  const auto out = l.conv_out(at::silu(l.norm_out(x, rows)), rows).to(at::kFloat);
  return share ? share->exchange->gather(out.contiguous(), 3) : out;
}

at::Tensor sample_latents(const at::Tensor& moments, const at::Tensor& noise) {
  const int64_t z = moments.size(1) / 2;
  const auto mean = moments.narrow(1, 0, z), logvar = at::clamp(moments.narrow(1, z, z), -30.0, 20.0);
  return mean + at::exp(0.5 * logvar) * noise;
}

}  // namespace studio::models

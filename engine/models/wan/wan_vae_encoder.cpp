// The encoder of Wan's causal 3D VAE (WanEncoder3d of diffusers 0.35.2) and WanVae::encode: the frames go in
// chunks (the first alone, then temporal_compression() at a time), each giving one latent frame, with the
// same causal caches as the decoder's. The Wan2.2 VAE's levels are residual, its pixels folded into patches.
#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/conv2d.h>
#include <ATen/ops/conv3d.h>
#include <ATen/ops/silu.h>
#include <c10/core/InferenceMode.h>

#include <optional>

#include "models/vae/vae_tiling.h"
#include "models/wan/wan_vae_blocks.h"
#include "plan/error.h"

namespace studio::models {

namespace wan {

at::Tensor Downsampler::operator()(const at::Tensor& x, DecodeState& s) const {
  const int64_t B = x.size(0), C = x.size(1), T = x.size(2), H = x.size(3);
  const auto frames = x.permute({0, 2, 1, 3, 4}).reshape({B * T, C, H, x.size(4)});
  // Zeros after the last row and column; under a row split the row after a rank's last is its neighbour's
  // (zeros at the picture's bottom), and with an even row count no output row needs the row above.
  const auto padded = s.rows ? at::constant_pad_nd(s.with_halo(frames, 2).narrow(2, 1, H + 1), {0, 1})
                             : at::constant_pad_nd(frames, {0, 1, 0, 1});
  const auto y2 = at::conv2d(padded, weight, bias, 2);
  auto y = y2.view({B, T, y2.size(1), y2.size(2), y2.size(3)}).permute({0, 2, 1, 3, 4});
  if (!time_conv) return y;
  at::Tensor& past = s.past[time_conv->slot];
  const auto last = y.narrow(2, T - 1, 1).clone();
  if (past.defined()) y = at::conv3d(at::cat({past, y}, 2), time_conv->weight, time_conv->bias, {2, 1, 1});
  past = last;
  return y;
}

at::Tensor AverageDown::operator()(const at::Tensor& x_in) const {
  const int64_t pad = (factor_t - x_in.size(2) % factor_t) % factor_t;
  const auto x = pad ? at::constant_pad_nd(x_in, {0, 0, 0, 0, pad, 0}) : x_in;
  const int64_t B = x.size(0), C = x.size(1), T = x.size(2) / factor_t, H = x.size(3) / factor_s,
                W = x.size(4) / factor_s, group = C * factor_t * factor_s * factor_s / out;
  return x.view({B, C, T, factor_t, H, factor_s, W, factor_s})
      .permute({0, 1, 3, 5, 7, 2, 4, 6})
      .reshape({B, out, group, T, H, W})
      .mean(2);
}

}  // namespace wan

std::shared_ptr<WanVae::Encoder> WanVae::Encoder::load(const WeightSource& w, const plan::WanVaeConfig& cfg) {
  auto e = std::make_shared<Encoder>();
  wan::LayerReader r{w};
  // The levels' channels: base_dim, then base_dim * each of dim_mult.
  std::vector<int64_t> dims{cfg.base_dim};
  for (int m : cfg.dim_mult) dims.push_back(int64_t(cfg.base_dim) * m);
  e->conv_in = r.conv("encoder.conv_in", cfg.in_channels, dims[0], {3, 3, 3});
  // Wan2.1's down blocks are one flat list (each level's resnets, then its resampler); the Wan2.2 VAE's are a
  // block per level (down_blocks.i.resnets.j, down_blocks.i.downsampler).
  size_t index = 0;
  const size_t levels = cfg.dim_mult.size();
  for (size_t i = 0; i < levels; ++i) {
    const std::string level = "encoder.down_blocks." + std::to_string(i) + ".";
    wan::DownBlock blk;
    int64_t in = dims[i];
    for (int j = 0; j < cfg.num_res_blocks; ++j, in = dims[i + 1])
      blk.resnets.push_back(r.resnet(cfg.is_residual ? level + "resnets." + std::to_string(j)
                                                     : "encoder.down_blocks." + std::to_string(index++),
                                     in, dims[i + 1]));
    const bool halves_time = i + 1 < levels && cfg.temperal_downsample[i];
    if (i + 1 < levels) {
      const std::string p = cfg.is_residual ? level + "downsampler." : "encoder.down_blocks." + std::to_string(index++) + ".";
      const int64_t c = dims[i + 1];
      wan::Downsampler down{w.take(p + "resample.1.weight", {c, c, 3, 3}), w.take(p + "resample.1.bias", {c}),
                            std::nullopt};
      if (halves_time) down.time_conv = r.conv(p + "time_conv", c, c, {3, 1, 1});
      blk.down = std::move(down);
    }
    if (cfg.is_residual) blk.shortcut = wan::AverageDown{dims[i + 1], halves_time ? 2 : 1, i + 1 < levels ? 2 : 1};
    e->down_blocks.push_back(std::move(blk));
  }
  const int64_t c = dims.back(), z2 = 2 * int64_t(cfg.z_dim);
  e->mid_first = r.resnet("encoder.mid_block.resnets.0", c, c);
  e->mid_attention = r.attention("encoder.mid_block.attentions.0.", c);
  e->mid_second = r.resnet("encoder.mid_block.resnets.1", c, c);
  e->norm_out = r.norm("encoder.norm_out", c, 4);
  e->conv_out = r.conv("encoder.conv_out", c, z2, {3, 3, 3});
  e->quant_conv = r.conv("quant_conv", z2, z2, {1, 1, 1});
  e->slots = r.slots;
  return e;
}

at::Tensor WanVae::Encoder::operator()(const at::Tensor& frames, wan::DecodeState& s) const {
  auto x = conv_in(frames, s);
  for (const auto& blk : down_blocks) {
    const auto input = x;
    for (const auto& r : blk.resnets) x = r(x, s);
    if (blk.down) x = (*blk.down)(x, s);
    if (blk.shortcut) x = x + (*blk.shortcut)(input);
  }
  x = mid_second(mid_attention(mid_first(x, s), s), s);
  return quant_conv(conv_out(at::silu(norm_out(x)), s), s);
}

void WanVae::check_encoder_input(const at::Tensor& video) const {
  if (!encoder_)
    throw InputError("vae/ holds no encoder weights (encoder.*): a picture cannot be encoded; use the model's "
                     "complete vae/ folder as the Hub has it");
  const int64_t tc = cfg_.temporal_compression();
  const int64_t s = cfg_.spatial_compression(), p = cfg_.patch_size;
  const int64_t channels = cfg_.in_channels / (p * p);
  if (video.dim() != 5 || video.size(1) != channels || (video.size(2) - 1) % tc != 0 || video.size(3) % s != 0 ||
      video.size(4) % s != 0)
    throw InputError("VAE encoder input has shape " + io::shape_str(video.sizes().vec()) + "; expected [B, " +
                     std::to_string(channels) + ", " + std::to_string(tc) + "k+1, H, W] with H and W multiples of " +
                     std::to_string(s));
}

at::Tensor WanVae::encode(const at::Tensor& video_in, const RowShare* rows) const {
  check_encoder_input(video_in);
  const int64_t s = cfg_.spatial_compression(), p = cfg_.patch_size;
  // Not with a row split: c10d's Gloo works on threads of its own, which cannot touch inference tensors.
  std::optional<c10::InferenceMode> guard;
  if (!rows) guard.emplace();
  wan::DecodeState state;
  state.past.resize(encoder_->slots);
  at::Tensor video = video_in;
  if (rows) {
    video = rows_of_share(video_in, 3, s, *rows);
    state.rows = rows->exchange;
  }
  const auto mine = encode_patches(wan::patchify(video, p), state);
  return rows ? rows->exchange->gather(mine.contiguous(), 3) : mine;
}

at::Tensor WanVae::encode_patches(const at::Tensor& video, wan::DecodeState& state) const {
  const int64_t tc = cfg_.temporal_compression();
  std::vector<at::Tensor> out;
  for (int64_t f = 0; f < video.size(2); f += f == 0 ? 1 : tc)
    out.push_back((*encoder_)(video.narrow(2, f, f == 0 ? 1 : tc).to(device_, dtype_), state).to(at::kFloat));
  return at::cat(out, 2);
}

at::Tensor WanVae::encode_tiled(const at::Tensor& video, const TileOptions& tiles, const DecodeProgress& progress) const {
  check_encoder_input(video);
  // diffusers 0.42.1 (0.35.2 fails on the Wan2.2 VAE's patches): the pixels folded into patches first, tiles of
  // tiles.sample_height x sample_width patches (so the Wan2.2 VAE's cover twice the pixels), each encoded with
  // caches of its own; untiled when the picture's pixels fit one tile.
  const int64_t p = cfg_.patch_size;
  const bool whole = video.size(3) <= tiles.sample_height && video.size(4) <= tiles.sample_width;
  return encode_in_tiles(wan::patchify(video, p), cfg_.spatial_compression() / p, tiles, {0.25, 0.25},
                         [&](const at::Tensor& tile) {
                           wan::DecodeState state;
                           state.past.resize(encoder_->slots);
                           return encode_patches(tile, state);
                         },
                         whole, progress);
}

}  // namespace studio::models

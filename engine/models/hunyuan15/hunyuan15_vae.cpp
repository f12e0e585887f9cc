#include "models/hunyuan15/hunyuan15_vae.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/clamp_min.h>
#include <ATen/ops/conv3d.h>
#include <ATen/ops/replication_pad3d.h>
#include <ATen/ops/silu.h>
#include <c10/core/InferenceMode.h>

#include <cmath>
#include <set>
#include <stdexcept>
#include <string>

#include "compat/torch_compat.h"
#include "models/vae/vae_tiling.h"
#include "io/safetensors/safetensors_file.h"
#include "plan/error.h"

namespace studio::models {

namespace {

// F.normalize over the channels of each pixel, times sqrt(C) and gamma.
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& gamma) {
  const auto norm = x.pow(2).sum(1, true).sqrt().clamp_min(1e-12);
  return x / norm * std::sqrt(double(x.size(1))) * gamma;
}

// (b, r1 r2 r3 c, f, h, w) -> (b, c, r1 f, r2 h, r3 w), channel ((i1 r2 + i2) r3 + i3) c + c_out.
at::Tensor unpack(const at::Tensor& t, int64_t r1, int64_t r2, int64_t r3) {
  const int64_t b = t.size(0), c = t.size(1) / (r1 * r2 * r3), f = t.size(2), h = t.size(3), w = t.size(4);
  return t.view({b, r1, r2, r3, c, f, h, w}).permute({0, 4, 5, 1, 6, 2, 7, 3}).reshape({b, c, f * r1, h * r2, w * r3});
}

// The inverse of unpack: (b, c, r1 f, r2 h, r3 w) -> (b, r1 r2 r3 c, f, h, w).
at::Tensor pack(const at::Tensor& t, int64_t r1, int64_t r2, int64_t r3) {
  const int64_t b = t.size(0), c = t.size(1), f = t.size(2) / r1, h = t.size(3) / r2, w = t.size(4) / r3;
  return t.reshape({b, c, f, r1, h, r2, w, r3})
      .permute({0, 3, 5, 7, 1, 2, 4, 6})
      .reshape({b, r1 * r2 * r3 * c, f, h, w});
}

// The means of groups of `group` consecutive channels.
at::Tensor average(const at::Tensor& t, int64_t group) {
  auto sizes = t.sizes().vec();
  sizes[1] /= group;
  sizes.insert(sizes.begin() + 2, group);
  return t.reshape(sizes).mean(2);
}

}  // namespace

at::Tensor Hunyuan15Vae::Conv::operator()(const at::Tensor& x, RowExchange* rows) const {
  if (weight.size(2) == 1) return at::conv3d(x, weight, bias);
  // Causal: replicate one pixel on each side and two frames in front.
  if (!rows) return at::conv3d(at::replication_pad3d(x, {1, 1, 1, 1, 2, 0}), weight, bias);
  // Split by rows: the neighbours' edge rows, or this rank's own where it holds the picture's edge.
  const auto first = x.narrow(3, 0, 1).contiguous(), last = x.narrow(3, x.size(3) - 1, 1).contiguous();
  auto [above, below] = rows->halo(first, last);
  const auto tall = at::cat({rows->at_top() ? first : above, x, rows->at_bottom() ? last : below}, 3);
  return at::conv3d(at::replication_pad3d(tall, {1, 1, 0, 0, 2, 0}), weight, bias);
}

std::shared_ptr<Hunyuan15Vae> Hunyuan15Vae::load(io::WeightSet& weights, const plan::Hunyuan15VaeConfig& cfg,
                                                 at::ScalarType dtype, at::Device device, bool with_encoder) {
  if (with_encoder && !weights.makes_weights() && !weights.contains("encoder.conv_in.conv.weight"))
    throw InputError(weights.dir() + " holds no encoder weights (encoder.*): the picture cannot be encoded; use the "
                     "model's complete vae/ folder as the Hub has it");
  WeightSource w{weights, dtype, device};
  auto m = std::make_shared<Hunyuan15Vae>();
  m->cfg_ = cfg;
  m->dtype_ = dtype;
  m->device_ = device;
  const std::vector<int> ch(cfg.block_out_channels.rbegin(), cfg.block_out_channels.rend());
  auto conv = [&](const std::string& p, int64_t in, int64_t out, int64_t k) {
    return Conv{w.take(p + ".weight", {out, in, k, k, k}), w.take(p + ".bias", {out})};
  };
  auto gamma = [&](const std::string& p, int64_t c) { return w.take(p + ".gamma", {c, 1, 1, 1}); };
  auto resnet = [&](const std::string& p, int64_t in, int64_t out) {
    Resnet r{gamma(p + ".norm1", in), gamma(p + ".norm2", out), conv(p + ".conv1.conv", in, out, 3),
             conv(p + ".conv2.conv", out, out, 3), {}};
    if (in != out) r.shortcut = conv(p + ".conv_shortcut", in, out, 1);
    return r;
  };
  auto attention = [&](const std::string& p, int64_t c) {
    return Attention{gamma(p + "norm", c), conv(p + "to_q", c, c, 1), conv(p + "to_k", c, c, 1),
                     conv(p + "to_v", c, c, 1), conv(p + "proj_out", c, c, 1)};
  };
  const std::string d = "decoder.";
  m->conv_in_ = conv(d + "conv_in.conv", cfg.latent_channels, ch[0], 3);
  m->mid_1_ = resnet(d + "mid_block.resnets.0", ch[0], ch[0]);
  m->mid_attention_ = attention(d + "mid_block.attentions.0.", ch[0]);
  m->mid_2_ = resnet(d + "mid_block.resnets.1", ch[0], ch[0]);
  int64_t in = ch[0];
  for (size_t i = 0; i < ch.size(); ++i) {
    const std::string p = d + "up_blocks." + std::to_string(i);
    UpBlock block;
    for (int j = 0; j <= cfg.layers_per_block; ++j) {
      block.resnets.push_back(resnet(p + ".resnets." + std::to_string(j), j == 0 ? in : ch[i], ch[i]));
    }
    in = ch[i];
    if (int(i) < cfg.spatial_upsamples()) {
      const bool temporal = int(i) < cfg.temporal_upsamples();
      const int64_t out = ch[i + 1], factor = temporal ? 8 : 4;
      block.upsampler = Upsampler{conv(p + ".upsamplers.0.conv.conv", ch[i], out * factor, 3), temporal,
                                  factor * out / ch[i]};
      in = out;
    }
    m->up_.push_back(std::move(block));
  }
  m->norm_out_ = gamma(d + "norm_out", ch.back());
  m->conv_out_ = conv(d + "conv_out.conv", ch.back(), cfg.out_channels, 3);
  if (!with_encoder) {
    // The encoder's weights stay in the file: decoding needs none of them.
    std::set<std::string> encoder;
    for (const auto& name : weights.names())
      if (name.rfind("encoder.", 0) == 0) encoder.insert(name);
    weights.expect_all_taken(encoder);
    return m;
  }
  const std::string e = "encoder.";
  const auto& down_ch = cfg.block_out_channels;
  Encoder enc;
  enc.conv_in = conv(e + "conv_in.conv", cfg.in_channels, down_ch[0], 3);
  in = down_ch[0];
  for (size_t i = 0; i < down_ch.size(); ++i) {
    const std::string p = e + "down_blocks." + std::to_string(i);
    DownBlock block;
    for (int j = 0; j < cfg.layers_per_block; ++j, in = down_ch[i])
      block.resnets.push_back(resnet(p + ".resnets." + std::to_string(j), in, down_ch[i]));
    if (int(i) < cfg.spatial_upsamples()) {
      const bool temporal = int(i) >= cfg.spatial_upsamples() - cfg.temporal_upsamples();
      const int64_t out = down_ch[i + 1], factor = temporal ? 8 : 4;
      block.downsampler = Downsampler{conv(p + ".downsamplers.0.conv.conv", down_ch[i], out / factor, 3), temporal,
                                      factor * down_ch[i] / out};
      in = out;
    }
    enc.down.push_back(std::move(block));
  }
  const int64_t c = down_ch.back();
  enc.mid_1 = resnet(e + "mid_block.resnets.0", c, c);
  enc.mid_attention = attention(e + "mid_block.attentions.0.", c);
  enc.mid_2 = resnet(e + "mid_block.resnets.1", c, c);
  enc.norm_out = gamma(e + "norm_out", c);
  enc.conv_out = conv(e + "conv_out.conv", c, 2 * int64_t(cfg.latent_channels), 3);
  m->encoder_ = std::move(enc);
  weights.expect_all_taken();
  return m;
}

at::Tensor Hunyuan15Vae::prepare(const at::Tensor& final_latents, int pad_frames) const {
  const auto l = final_latents.narrow(2, pad_frames, final_latents.size(2) - pad_frames);
  return (l / cfg_.scaling_factor).to(device_, dtype_);
}

int Hunyuan15Vae::output_frames(int latent_frames) const {
  return 1 + cfg_.temporal_compression_ratio * (latent_frames - 1);
}

at::Tensor Hunyuan15Vae::resnet(const Resnet& r, const at::Tensor& x, RowExchange* rows) const {
  auto h = r.conv1(at::silu(rms_norm(x, r.norm1)), rows);
  h = r.conv2(at::silu(rms_norm(h, r.norm2)), rows);
  return h + (r.shortcut.weight.defined() ? r.shortcut(x) : x);
}

// One head over every pixel; a pixel sees the pixels of its own frame and the earlier ones. Frame by frame,
// so no mask is ever made: frame f's queries against the keys and values of frames 0..f. Split by rows, a
// rank's queries are its own pixels and the keys and values every rank's (their rows in order: the frame's).
at::Tensor Hunyuan15Vae::attention(const Attention& a, const at::Tensor& x, RowExchange* rows) const {
  const auto n = rms_norm(x, a.norm);
  const int64_t B = x.size(0), C = x.size(1), F = x.size(2), hw = x.size(3) * x.size(4);
  auto tokens = [&](const at::Tensor& t) { return t.reshape({B, C, -1}).transpose(1, 2).unsqueeze(1); };
  auto whole = [&](const at::Tensor& t) { return rows ? rows->gather(t, 3) : t; };
  const auto keys = whole(a.k(n));
  const int64_t HW = keys.size(3) * keys.size(4);
  const auto q = tokens(a.q(n)), k = tokens(keys), v = tokens(whole(a.v(n)));
  std::vector<at::Tensor> frames;
  for (int64_t f = 0; f < F; ++f)
    frames.push_back(compat::attention(q.narrow(2, f * hw, hw), k.narrow(2, 0, (f + 1) * HW), v.narrow(2, 0, (f + 1) * HW)));
  const auto out = at::cat(frames, 2).squeeze(1).transpose(1, 2).reshape(x.sizes());
  return a.out(out) + x;
}

at::Tensor Hunyuan15Vae::upsample(const Upsampler& u, const at::Tensor& x, RowExchange* rows) const {
  const auto h = u.conv(x, rows);
  if (!u.temporal) return unpack(h, 1, 2, 2) + unpack(x.repeat_interleave(u.repeats, 1), 1, 2, 2);
  // The first frame is not doubled: it keeps the first half of its channels, and half the shortcut's copies.
  const int64_t rest = x.size(2) - 1;
  auto first = unpack(h.narrow(2, 0, 1), 1, 2, 2);
  first = first.narrow(1, 0, first.size(1) / 2);
  const auto h_all = at::cat({first, unpack(h.narrow(2, 1, rest), 2, 2, 2)}, 2);
  const auto s_first = unpack(x.narrow(2, 0, 1), 1, 2, 2).repeat_interleave(u.repeats / 2, 1);
  const auto s_rest = unpack(x.narrow(2, 1, rest), 2, 2, 2).repeat_interleave(u.repeats, 1);
  return h_all + at::cat({s_first, s_rest}, 2);
}

// Frame 0 is packed in space only, its channels twice; its shortcut averages half as many channels. Split by
// rows, every rank's share is whole latent rows, so an even number of rows at every level: packing stays local.
at::Tensor Hunyuan15Vae::downsample(const Downsampler& d, const at::Tensor& x, RowExchange* rows) const {
  const auto h = d.conv(x, rows);
  if (!d.temporal) return pack(h, 1, 2, 2) + average(pack(x, 1, 2, 2), d.group);
  const int64_t rest = x.size(2) - 1;
  const auto first = pack(h.narrow(2, 0, 1), 1, 2, 2);
  const auto h_all = at::cat({at::cat({first, first}, 1), pack(h.narrow(2, 1, rest), 2, 2, 2)}, 2);
  const auto s_first = average(pack(x.narrow(2, 0, 1), 1, 2, 2), d.group / 2);
  const auto s_rest = average(pack(x.narrow(2, 1, rest), 2, 2, 2), d.group);
  return h_all + at::cat({s_first, s_rest}, 2);
}

at::Tensor Hunyuan15Vae::encode(const at::Tensor& video, const RowShare* share) const {
  if (!encoder_) throw std::logic_error("internal error: HunyuanVideo-1.5's VAE was loaded without its encoder");
  const int64_t s = cfg_.spatial_compression_ratio, t = cfg_.temporal_compression_ratio;
  const bool fits = video.dim() == 5 && video.size(1) == cfg_.in_channels && video.size(2) >= 1 &&
                    (video.size(2) - 1) % t == 0 && video.size(3) > 0 && video.size(3) % s == 0 &&
                    video.size(4) > 0 && video.size(4) % s == 0;
  if (!fits)
    throw InputError("HunyuanVideo-1.5's VAE encoder got a video of shape " + io::shape_str(video.sizes().vec()) +
                     "; it takes [B, " + std::to_string(cfg_.in_channels) + ", F, H, W] with F = 1 + " +
                     std::to_string(t) + "k frames and H, W multiples of " + std::to_string(s));
  // Not with a row split: c10d's Gloo works on threads of its own, which cannot touch inference tensors.
  std::optional<c10::InferenceMode> guard;
  if (!share) guard.emplace();
  at::Tensor mine = video;
  RowExchange* rows = nullptr;
  if (share) {
    mine = rows_of_share(video, 3, s, *share);
    rows = share->exchange;
  }
  const auto& e = *encoder_;
  auto h = e.conv_in(mine.to(device_, dtype_), rows);
  for (const auto& block : e.down) {
    for (const auto& r : block.resnets) h = resnet(r, h, rows);
    if (block.downsampler) h = downsample(*block.downsampler, h, rows);
  }
  h = resnet(e.mid_2, attention(e.mid_attention, resnet(e.mid_1, h, rows), rows), rows);
  const auto shortcut = average(h, h.size(1) / (2 * cfg_.latent_channels));
  const auto moments = (e.conv_out(at::silu(rms_norm(h, e.norm_out)), rows) + shortcut).to(at::kFloat);
  return rows ? rows->gather(moments.contiguous(), 3) : moments;
}

at::Tensor Hunyuan15Vae::encode_tiled(const at::Tensor& video, const TileOptions& tiles,
                                      const DecodeProgress& progress) const {
  const bool whole = video.size(3) <= tiles.sample_height && video.size(4) <= tiles.sample_width;
  return encode_in_tiles(video, cfg_.spatial_compression_ratio, tiles, {0.25, 0.25},
                         [&](const at::Tensor& tile) { return encode(tile); }, whole, progress);
}

at::Tensor Hunyuan15Vae::decode(const at::Tensor& z, const DecodeProgress& progress, RowExchange* rows) const {
  DecoderLevels levels{progress, int(up_.size()) + 2};
  const auto& c0 = conv_in_.weight;
  auto h = conv_in_(z, rows) + z.repeat_interleave(c0.size(0) / z.size(1), 1);
  h = resnet(mid_2_, attention(mid_attention_, resnet(mid_1_, h, rows), rows), rows);
  levels.tell();
  for (const auto& block : up_) {
    for (const auto& r : block.resnets) h = resnet(r, h, rows);
    if (block.upsampler) h = upsample(*block.upsampler, h, rows);
    levels.tell();
  }
  h = conv_out_(at::silu(rms_norm(h, norm_out_)), rows);
  levels.tell();
  return h;
}

void Hunyuan15Vae::decode_batches(const at::Tensor& z, const std::function<void(const at::Tensor&)>& on_batch,
                                  RowExchange* rows, const DecodeProgress& progress) const {
  on_batch(decode(z.to(device_, dtype_), progress, rows).to(at::kFloat));
}

at::Tensor Hunyuan15Vae::decode_tiled(const at::Tensor& z, const TileOptions& tiles,
                                      const DecodeProgress& progress) const {
  // diffusers 0.42.1's tiled_decode: tiles of every frame overlapping by a quarter both ways, blended.
  return decode_in_tiles(z, cfg_.spatial_compression_ratio, tiles, {0.25, 0.25},
                         [&](const at::Tensor& tile) { return decode(tile.to(device_, dtype_)).to(at::kFloat); },
                         progress);
}

}  // namespace studio::models

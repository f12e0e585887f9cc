#include "models/cogvideox/cogvideox_vae.h"

#include <c10/core/InferenceMode.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/conv2d.h>
#include <ATen/ops/conv3d.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/rsqrt.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/silu.h>
#include <ATen/ops/upsample_nearest2d.h>
#include <ATen/ops/upsample_nearest3d.h>

#include <functional>
#include <optional>
#include <set>

#include "models/vae/vae_tiling.h"
#include "plan/error.h"

namespace studio::models {

namespace {

// What one decode carries from batch to batch: one cache slot per causal convolution, and the row split
// when several ranks decode one picture (nullptr: this process has every row).
struct Context {
  std::vector<at::Tensor> caches;
  RowExchange* rows = nullptr;
  // x with the neighbours' adjacent row (dim `dim`) above and below; zeros at the picture's edges, which
  // is the zero padding a single process would add there.
  at::Tensor with_halo(const at::Tensor& x, int64_t dim) const {
    auto [above, below] = rows->halo(x.narrow(dim, 0, 1), x.narrow(dim, x.size(dim) - 1, 1));
    return at::cat({above, x, below}, dim);
  }
};

// Convolution over time that sees only the past: the first batch pads with copies of its first frame,
// later batches with the last (kernel - 1) frames of the previous batch's input.
struct CausalConv {
  at::Tensor weight, bias;
  int64_t kt = 1;
  size_t slot = 0;
  static CausalConv load(const WeightSource& w, const std::string& p, int64_t in, int64_t out, int64_t k, size_t& slots) {
    CausalConv c;
    c.weight = w.take(p + ".conv.weight", {out, in, k, k, k});
    c.bias = w.take(p + ".conv.bias", {out});
    c.kt = k;
    c.slot = slots++;
    return c;
  }
  // Output frames are computed two at a time into one output tensor, reading only the input frames each
  // needs from `frames(first, count)`: the padded input (cache + frames) never exists whole, and neither
  // does a normalised copy of it (at 480 x 720 one frame of 128 channels is 177 MB).
  // With a row split, the rows come with one halo row on each side and are not padded again.
  using Frames = std::function<at::Tensor(int64_t first, int64_t count)>;
  at::Tensor operator()(const Frames& own, int64_t T, Context& ctx) const {
    const int64_t pad = (weight.size(3) - 1) / 2;
    Frames frames = own;
    if (ctx.rows && pad > 0) {
      TORCH_CHECK(pad == 1, "a row split exchanges one halo row; this convolution needs ", pad);
      frames = [&](int64_t first, int64_t count) { return ctx.with_halo(own(first, count), 3); };
    }
    const std::vector<int64_t> padding{0, ctx.rows ? 0 : pad, pad};
    if (kt == 1) return at::conv3d(frames(0, T), weight, bias, 1, padding);
    at::Tensor& cache = ctx.caches[slot];
    const at::Tensor past = cache.defined() ? cache : frames(0, 1).expand({-1, -1, kt - 1, -1, -1});
    at::Tensor out;
    const int64_t step = 2;
    for (int64_t t = 0; t < T; t += step) {
      const int64_t n = std::min(step, T - t);
      // Input frames t .. t + n + kt - 2 of the sequence past ++ frames.
      std::vector<at::Tensor> parts;
      const int64_t from_past = std::max<int64_t>(0, (kt - 1) - t);
      if (from_past > 0) parts.push_back(past.narrow(2, kt - 1 - from_past, from_past));
      const int64_t x_begin = std::max<int64_t>(0, t - (kt - 1));
      parts.push_back(frames(x_begin, t + n - x_begin));
      auto y = at::conv3d(at::cat(parts, 2), weight, bias, 1, padding);
      if (!out.defined()) out = at::empty({y.size(0), y.size(1), T, y.size(3), y.size(4)}, y.options());
      out.narrow(2, t, n).copy_(y);
    }
    // The next batch continues from the last kt - 1 frames of past ++ frames.
    const int64_t keep = kt - 1;
    cache = T >= keep ? frames(T - keep, keep).clone()
                      : at::cat({past.narrow(2, past.size(2) - (keep - T), keep - T), frames(0, T)}, 2).clone();
    return out;
  }
  at::Tensor operator()(const at::Tensor& x, Context& ctx) const {
    return (*this)([&](int64_t first, int64_t count) { return x.narrow(2, first, count); }, x.size(2), ctx);
  }
};

// f * y + b in place, with y and b (one frame per frame of f) nearest-upsampled to f's rows and columns.
// With integer ratios (always, in CogVideoX) y and b stay at low resolution and are broadcast, so nothing
// full-size is made. Nearest upsampling commutes with the 1x1x1 convolutions that made y and b.
void modulate(at::Tensor f, const at::Tensor& y, const at::Tensor& b) {
  const int64_t B = f.size(0), C = f.size(1);
  std::vector<int64_t> fv{B, C}, lv{B, C};
  bool integer = true;
  for (int d = 2; d < 5; ++d) {
    integer = integer && f.size(d) % y.size(d) == 0;
    const int64_t r = integer ? f.size(d) / y.size(d) : 1;
    fv.insert(fv.end(), {y.size(d), r});
    lv.insert(lv.end(), {y.size(d), 1});
  }
  if (!integer) {
    const std::vector<int64_t> size{f.size(2), f.size(3), f.size(4)};
    f.mul_(at::upsample_nearest3d(y, size)).add_(at::upsample_nearest3d(b, size));
    return;
  }
  f.view(fv).mul_(y.view(lv)).add_(b.view(lv));
}

// Group norm of f, modulated by the latents zq (SpatialNorm3D), then SiLU, produced for any range of
// frames on demand: the group statistics are computed once over the whole batch, so no full-size
// normalised copy of f is ever made. With an odd frame count > 1 the first frame follows the first latent
// frame alone, as the reference interpolates it separately.
struct SpatialNorm {
  at::Tensor norm_w, norm_b, y_w, y_b, b_w, b_b;
  int64_t groups = 32;
  static SpatialNorm load(const WeightSource& w, const std::string& p, int64_t ch, int64_t zch, int64_t groups) {
    SpatialNorm n;
    n.norm_w = w.take(p + ".norm_layer.weight", {ch});
    n.norm_b = w.take(p + ".norm_layer.bias", {ch});
    n.y_w = w.take(p + ".conv_y.conv.weight", {ch, zch, 1, 1, 1});
    n.y_b = w.take(p + ".conv_y.conv.bias", {ch});
    n.b_w = w.take(p + ".conv_b.conv.weight", {ch, zch, 1, 1, 1});
    n.b_b = w.take(p + ".conv_b.conv.bias", {ch});
    n.groups = groups;
    return n;
  }
  CausalConv::Frames activated(const at::Tensor& f, const at::Tensor& zq, const Context& ctx) const {
    const int64_t B = f.size(0), C = f.size(1), T = f.size(2), G = groups;
    // Statistics in float32 whatever the model's dtype (a bf16 mean of millions of values is off), of the
    // whole picture when the ranks decode it by rows.
    const auto [mean, var] = group_mean_var(f.reshape({B, G, -1}), ctx.rows);
    const auto rstd = at::rsqrt(var + 1e-6).view({B, G, 1, 1, 1, 1});
    const auto mu = mean.view({B, G, 1, 1, 1, 1});
    const auto y = at::conv3d(zq, y_w, y_b), b = at::conv3d(zq, b_w, b_b);  // low resolution
    // The latent frame each output frame follows (nearest, with an odd first frame kept single).
    const int64_t Tz = y.size(2);
    std::vector<int64_t> src(static_cast<size_t>(T));
    for (int64_t t = 0; t < T; ++t)
      src[size_t(t)] = (T > 1 && T % 2 == 1) ? (t == 0 ? 0 : 1 + (t - 1) * (Tz - 1) / (T - 1)) : t * Tz / T;
    return [=, weight = norm_w, bias = norm_b](int64_t first, int64_t count) {
      auto x = f.narrow(2, first, count);
      auto h = ((x.reshape({B, G, C / G, count, x.size(3), x.size(4)}) - mu) * rstd).view(x.sizes()).to(x.scalar_type());
      h.mul_(weight.view({1, C, 1, 1, 1})).add_(bias.view({1, C, 1, 1, 1}));
      auto idx = at::tensor(std::vector<int64_t>(src.begin() + first, src.begin() + first + count));
      modulate(h, y.index_select(2, idx.to(y.device())), b.index_select(2, idx.to(b.device())));
      return at::silu_(h);
    };
  }
};

struct Resnet {
  SpatialNorm norm1, norm2;
  CausalConv conv1, conv2;
  at::Tensor shortcut_w, shortcut_b;  // 1x1x1, when channels change
  static Resnet load(const WeightSource& w, const std::string& p, int64_t in, int64_t out, int64_t zch, int64_t groups,
                     size_t& slots) {
    Resnet r;
    r.norm1 = SpatialNorm::load(w, p + ".norm1", in, zch, groups);
    r.conv1 = CausalConv::load(w, p + ".conv1", in, out, 3, slots);
    r.norm2 = SpatialNorm::load(w, p + ".norm2", out, zch, groups);
    r.conv2 = CausalConv::load(w, p + ".conv2", out, out, 3, slots);
    if (in != out) {
      r.shortcut_w = w.take(p + ".conv_shortcut.weight", {out, in, 1, 1, 1});
      r.shortcut_b = w.take(p + ".conv_shortcut.bias", {out});
    }
    return r;
  }
  at::Tensor operator()(const at::Tensor& x, const at::Tensor& zq, Context& c) const {
    const int64_t T = x.size(2);
    at::Tensor h = conv1(norm1.activated(x, zq, c), T, c);
    h = conv2(norm2.activated(h, zq, c), T, c);
    if (!shortcut_w.defined()) return h.add_(x);
    // The 1x1x1 shortcut frame by frame: x is the widest tensor here, so no full-size copy of it is made.
    for (int64_t t = 0; t < T; ++t)
      h.narrow(2, t, 1).add_(at::conv3d(x.narrow(2, t, 1), shortcut_w, shortcut_b));
    return h;
  }
};

// Nearest 2x upsampling of rows and columns (and of time when compressing it, keeping an odd first
// frame single), then a 3x3 convolution per frame.
struct Upsampler {
  at::Tensor weight, bias;
  bool compress_time = false;
  // Frame by frame into one output tensor: the upsampled input and its convolution are the largest
  // tensors of the decoder (256 channels at full resolution), so neither exists whole.
  at::Tensor operator()(const at::Tensor& x, const Context& ctx) const {
    const int64_t B = x.size(0), T = x.size(2), H = x.size(3), W = x.size(4);
    // Source frame of each output frame: time doubles when compressing it, an odd first frame stays single.
    std::vector<int64_t> src;
    if (compress_time && T > 1) {
      const int64_t first = T % 2 == 1 ? 1 : 0;
      if (first) src.push_back(0);
      for (int64_t t = first; t < T; ++t) src.insert(src.end(), {t, t});
    } else {
      for (int64_t t = 0; t < T; ++t) src.push_back(t);
    }
    at::Tensor out = at::empty({B, weight.size(0), int64_t(src.size()), 2 * H, 2 * W}, x.options());
    for (size_t t = 0; t < src.size(); ++t) {
      if (!ctx.rows) {
        auto frame = at::upsample_nearest2d(x.select(2, src[t]), {2 * H, 2 * W});
        out.select(2, int64_t(t)).copy_(at::conv2d(frame, weight, bias, 1, 1));
        continue;
      }
      // Row split: one neighbour row each side, upsampled to two, of which the inner one is the halo.
      auto frame = at::upsample_nearest2d(ctx.with_halo(x.select(2, src[t]), 2), {2 * H + 4, 2 * W});
      out.select(2, int64_t(t)).copy_(at::conv2d(frame.narrow(2, 1, 2 * H + 2), weight, bias, 1, at::IntArrayRef{0, 1}));
    }
    return out;
  }
};

struct UpBlock {
  std::vector<Resnet> resnets;
  std::optional<Upsampler> up;
};

}  // namespace

struct CogVideoXVae::Impl {
  CausalConv conv_in, conv_out;
  std::vector<Resnet> mid;
  std::vector<UpBlock> up_blocks;
  SpatialNorm norm_out;
  size_t slots = 0;
};

std::shared_ptr<CogVideoXVae> CogVideoXVae::load(const std::string& part_dir, const plan::CogVideoXVaeConfig& cfg,
                                                 at::ScalarType dtype, at::Device device) {
  auto weights = io::WeightSet::open(part_dir, "diffusion_pytorch_model");
  return load(weights, cfg, dtype, device);
}

std::shared_ptr<CogVideoXVae> CogVideoXVae::load(io::WeightSet& weights, const plan::CogVideoXVaeConfig& cfg,
                                                 at::ScalarType dtype, at::Device device) {
  WeightSource w{weights, dtype, device};
  auto impl = std::make_shared<Impl>();
  std::vector<int64_t> ch(cfg.block_out_channels.rbegin(), cfg.block_out_channels.rend());
  const int64_t z = cfg.latent_channels, g = cfg.norm_num_groups;
  size_t& slots = impl->slots;
  impl->conv_in = CausalConv::load(w, "decoder.conv_in", z, ch[0], 3, slots);
  for (int i = 0; i < 2; ++i)
    impl->mid.push_back(Resnet::load(w, "decoder.mid_block.resnets." + std::to_string(i), ch[0], ch[0], z, g, slots));
  int time_levels = 0;
  for (int r = cfg.temporal_compression_ratio; r > 1; r /= 2) ++time_levels;
  int64_t prev = ch[0];
  for (size_t i = 0; i < ch.size(); ++i) {
    const std::string p = "decoder.up_blocks." + std::to_string(i);
    UpBlock blk;
    for (int j = 0; j <= cfg.layers_per_block; ++j) {
      blk.resnets.push_back(Resnet::load(w, p + ".resnets." + std::to_string(j), j == 0 ? prev : ch[i], ch[i], z, g, slots));
    }
    if (i + 1 < ch.size()) {
      Upsampler u;
      u.weight = w.take(p + ".upsamplers.0.conv.weight", {ch[i], ch[i], 3, 3});
      u.bias = w.take(p + ".upsamplers.0.conv.bias", {ch[i]});
      u.compress_time = int(i) < time_levels;
      blk.up = u;
    }
    impl->up_blocks.push_back(std::move(blk));
    prev = ch[i];
  }
  impl->norm_out = SpatialNorm::load(w, "decoder.norm_out", ch.back(), z, g);
  impl->conv_out = CausalConv::load(w, "decoder.conv_out", ch.back(), cfg.out_channels, 3, slots);
  // The encoder is not used to generate; a folder may carry it or not.
  std::set<std::string> encoder;
  for (const auto& name : weights.names())
    if (name.rfind("encoder.", 0) == 0) encoder.insert(name);
  weights.expect_all_taken(encoder);

  auto vae = std::shared_ptr<CogVideoXVae>(new CogVideoXVae());
  vae->cfg_ = cfg;
  vae->dtype_ = dtype;
  vae->device_ = device;
  vae->impl_ = impl;
  return vae;
}

at::Tensor CogVideoXVae::prepare(const at::Tensor& latents, int pad_frames) const {
  return latents.narrow(1, pad_frames, latents.size(1) - pad_frames).permute({0, 2, 1, 3, 4}) / cfg_.scaling_factor;
}

at::Tensor CogVideoXVae::decode_tiled(const at::Tensor& z, const TileOptions& tiles,
                                      const DecodeProgress& progress) const {
  // CogVideoX's tiles overlap by a sixth down and a fifth across (diffusers' tile overlap factors).
  return decode_in_tiles(z, cfg_.spatial_compression, tiles, {1.0 / 6, 1.0 / 5},
                         [&](const at::Tensor& tile) { return decode(tile); }, progress);
}

int CogVideoXVae::output_frames(int latent_frames) const {
  // Each batch of n latent frames gives n * r frames, except an odd first batch: 1 + (n - 1) * r.
  const int r = cfg_.temporal_compression_ratio;
  const int batches = std::max(latent_frames / 2, 1);
  const int first = latent_frames - 2 * (batches - 1);
  const int first_frames = first % 2 == 1 && first > 1 ? 1 + (first - 1) * r : first == 1 ? 1 : first * r;
  return first_frames + (batches - 1) * 2 * r;
}

void CogVideoXVae::decode_batches(const at::Tensor& z_all, const std::function<void(const at::Tensor&)>& on_batch,
                                  RowExchange* rows, const DecodeProgress& progress) const {
  // Not with a row split: c10d's Gloo works on threads of its own, which cannot touch inference tensors.
  // Nothing requires grad, so no graph is recorded either way.
  std::optional<c10::InferenceMode> guard;
  if (!rows) guard.emplace();
  const Impl& m = *impl_;
  if (z_all.dim() != 5 || z_all.size(1) != cfg_.latent_channels)
    throw InputError("VAE input has shape " + io::shape_str(z_all.sizes().vec()) + "; expected [B, " +
                     std::to_string(cfg_.latent_channels) + ", F, h, w]");
  const int64_t F = z_all.size(2);
  const int64_t batches = std::max<int64_t>(F / 2, 1), rem = F % 2;
  Context ctx;
  ctx.caches.resize(m.slots);
  ctx.rows = rows;
  for (int64_t i = 0; i < batches; ++i) {
    const int64_t start = 2 * i + (i == 0 ? 0 : rem), end = std::min<int64_t>(2 * (i + 1) + rem, F);
    const at::Tensor z = z_all.narrow(2, start, end - start).to(device_, dtype_);
    at::Tensor h = m.conv_in(z, ctx);
    for (const auto& r : m.mid) h = r(h, z, ctx);
    for (const auto& blk : m.up_blocks) {
      for (const auto& r : blk.resnets) h = r(h, z, ctx);
      if (blk.up) h = (*blk.up)(h, ctx);
    }
    h = m.conv_out(m.norm_out.activated(h, z, ctx), h.size(2), ctx).to(at::kFloat);
    on_batch(h);
    if (progress) progress(int(i + 1), int(batches));
  }
}

at::Tensor CogVideoXVae::decode(const at::Tensor& z) const {
  std::vector<at::Tensor> out;
  decode_batches(z, [&](const at::Tensor& frames) { out.push_back(frames); });
  return at::cat(out, 2);
}

}  // namespace studio::models

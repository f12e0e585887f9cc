#include "models/wan/wan_vae_blocks.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/conv2d.h>
#include <ATen/ops/conv3d.h>
#include <ATen/ops/norm.h>
#include <ATen/ops/repeat_interleave.h>
#include <ATen/ops/silu.h>
#include <ATen/ops/upsample_nearest2d.h>
#include <ATen/ops/zeros.h>

#include <cmath>

#include "compat/torch_compat.h"

namespace studio::models::wan {

namespace {

constexpr int64_t kPastFrames = 2;  // diffusers' CACHE_T: a 3-frame kernel's past

}  // namespace

at::Tensor DecodeState::with_halo(const at::Tensor& x, int64_t dim) const {
  // Contiguous edges: the exchange receives into buffers laid out like them.
  auto [above, below] = rows->halo(x.narrow(dim, 0, 1).contiguous(), x.narrow(dim, x.size(dim) - 1, 1).contiguous());
  return at::cat({above, x, below}, dim);
}

at::Tensor CausalConv::operator()(const at::Tensor& x, DecodeState& s) const {
  if (weight.size(2) == 1) return at::conv3d(x, weight, bias);
  const int64_t pad = (weight.size(3) - 1) / 2;
  // Under a row split the rows come with a halo row each side, kept in the past with them.
  const bool halo = s.rows && pad > 0;
  const at::Tensor frames = halo ? s.with_halo(x, 3) : x;
  at::Tensor& past = s.past[slot];
  if (!past.defined()) {
    auto shape = frames.sizes().vec();
    shape[2] = kPastFrames;
    past = at::zeros(shape, frames.options());
  }
  const auto input = at::cat({past, frames}, 2);
  past = input.narrow(2, input.size(2) - kPastFrames, kPastFrames).clone();
  return at::conv3d(input, weight, bias, 1, at::IntArrayRef{0, halo ? 0 : pad, pad});
}

at::Tensor RmsNorm::operator()(const at::Tensor& x) const {
  // F.normalize(x, dim=1): x / max(|x|, 1e-12), then * sqrt(C) * gamma, in that order.
  const double scale = std::sqrt(double(x.size(1)));
  return x / at::norm(x, 2, {1}, /*keepdim=*/true).clamp_min(1e-12) * scale * gamma;
}

at::Tensor Resnet::operator()(const at::Tensor& x, DecodeState& s) const {
  const auto h = shortcut.weight.defined() ? shortcut(x, s) : x;
  auto y = conv1(at::silu(norm1(x)), s);
  y = conv2(at::silu(norm2(y)), s);
  return y + h;
}

at::Tensor Attention::operator()(const at::Tensor& x, const DecodeState& s) const {
  const int64_t B = x.size(0), C = x.size(1), T = x.size(2), H = x.size(3), W = x.size(4);
  const auto frames = x.permute({0, 2, 1, 3, 4}).reshape({B * T, C, H, W});
  const auto qkv = at::conv2d(norm(frames), qkv_w, qkv_b).reshape({B * T, 1, 3 * C, H * W}).permute({0, 1, 3, 2});
  const auto q = qkv.narrow(3, 0, C).contiguous();
  auto k = qkv.narrow(3, C, C).contiguous(), v = qkv.narrow(3, 2 * C, C).contiguous();
  if (s.rows) k = s.rows->gather(k, 2), v = s.rows->gather(v, 2);  // every rank's pixels of each frame
  const auto a = compat::attention(q, k, v).squeeze(1).permute({0, 2, 1}).reshape({B * T, C, H, W});
  return at::conv2d(a, proj_w, proj_b).view({B, T, C, H, W}).permute({0, 2, 1, 3, 4}) + x;
}

at::Tensor Upsampler::operator()(const at::Tensor& x_in, DecodeState& s) const {
  at::Tensor x = x_in;
  if (time_conv) {
    at::Tensor& past = s.past[time_conv->slot];
    if (!past.defined()) {
      // The first latent frame: no time convolution; the next one's past is zeros.
      auto shape = x.sizes().vec();
      shape[2] = kPastFrames;
      past = at::zeros(shape, x.options());
    } else {
      const int64_t B = x.size(0), C = x.size(1), T = x.size(2), H = x.size(3), W = x.size(4);
      x = (*time_conv)(x, s).view({B, 2, C, T, H, W}).permute({0, 2, 3, 1, 4, 5}).reshape({B, C, 2 * T, H, W});
    }
  }
  const int64_t B = x.size(0), C = x.size(1), T = x.size(2), H = x.size(3), W = x.size(4);
  const auto frames = x.permute({0, 2, 1, 3, 4}).reshape({B * T, C, H, W});
  at::Tensor y;
  if (!s.rows) {
    y = at::conv2d(at::upsample_nearest2d(frames, {2 * H, 2 * W}), weight, bias, 1, 1);
  } else {
    // One neighbour row each side, upsampled to two, of which the inner one is the halo.
    const auto up = at::upsample_nearest2d(s.with_halo(frames, 2), {2 * H + 4, 2 * W});
    y = at::conv2d(up.narrow(2, 1, 2 * H + 2), weight, bias, 1, at::IntArrayRef{0, 1});
  }
  return y.view({B, T, y.size(1), 2 * H, 2 * W}).permute({0, 2, 1, 3, 4});
}

at::Tensor RepeatUp::operator()(const at::Tensor& x, bool first_chunk) const {
  const int64_t B = x.size(0), T = x.size(2), H = x.size(3), W = x.size(4);
  const int64_t repeats = out * factor_t * factor_s * factor_s / x.size(1);
  auto y = at::repeat_interleave(x, repeats, 1)
               .view({B, out, factor_t, factor_s, factor_s, T, H, W})
               .permute({0, 1, 5, 2, 6, 3, 7, 4})
               .reshape({B, out, T * factor_t, H * factor_s, W * factor_s});
  return first_chunk ? y.narrow(2, factor_t - 1, y.size(2) - (factor_t - 1)) : y;
}

at::Tensor patchify(const at::Tensor& x, int64_t p) {
  if (p == 1) return x;
  const int64_t B = x.size(0), C = x.size(1), F = x.size(2), H = x.size(3) / p, W = x.size(4) / p;
  return x.view({B, C, F, H, p, W, p}).permute({0, 1, 6, 4, 2, 3, 5}).reshape({B, C * p * p, F, H, W});
}

at::Tensor unpatchify(const at::Tensor& x, int64_t p) {
  if (p == 1) return x;
  const int64_t B = x.size(0), C = x.size(1) / (p * p), F = x.size(2), H = x.size(3), W = x.size(4);
  return x.view({B, C, p, p, F, H, W}).permute({0, 1, 4, 5, 3, 6, 2}).reshape({B, C, F, H * p, W * p});
}

CausalConv LayerReader::conv(const std::string& p, int64_t in, int64_t out, std::vector<int64_t> kernel) {
  CausalConv c;
  std::vector<int64_t> shape{out, in};
  shape.insert(shape.end(), kernel.begin(), kernel.end());
  c.weight = w.take(p + ".weight", shape);
  c.bias = w.take(p + ".bias", {out});
  if (kernel[0] > 1) c.slot = slots++;
  return c;
}

RmsNorm LayerReader::norm(const std::string& p, int64_t c, size_t dims) {
  std::vector<int64_t> shape(dims, 1);
  shape[0] = c;
  return RmsNorm{w.take(p + ".gamma", shape)};
}

Resnet LayerReader::resnet(const std::string& p, int64_t in, int64_t out) {
  Resnet r;
  r.norm1 = norm(p + ".norm1", in, 4);
  r.conv1 = conv(p + ".conv1", in, out, {3, 3, 3});
  r.norm2 = norm(p + ".norm2", out, 4);
  r.conv2 = conv(p + ".conv2", out, out, {3, 3, 3});
  if (in != out) r.shortcut = conv(p + ".conv_shortcut", in, out, {1, 1, 1});
  return r;
}

Attention LayerReader::attention(const std::string& a, int64_t c) {
  return {norm(a + "norm", c, 3), w.take(a + "to_qkv.weight", {3 * c, c, 1, 1}), w.take(a + "to_qkv.bias", {3 * c}),
          w.take(a + "proj.weight", {c, c, 1, 1}), w.take(a + "proj.bias", {c})};
}

}  // namespace studio::models::wan

namespace studio::models {

std::shared_ptr<WanVae::Decoder> WanVae::Decoder::load(const WeightSource& w, const plan::WanVaeConfig& cfg) {
  auto d = std::make_shared<Decoder>();
  wan::LayerReader r{w};
  const int64_t z = cfg.z_dim;
  const auto dims = cfg.decoder_dims();
  d->post_quant_conv = r.conv("post_quant_conv", z, z, {1, 1, 1});
  d->conv_in = r.conv("decoder.conv_in", z, dims[0], {3, 3, 3});
  const std::string mid = "decoder.mid_block.";
  d->mid_first = r.resnet(mid + "resnets.0", dims[0], dims[0]);
  d->mid_attention = r.attention(mid + "attentions.0.", dims[0]);
  d->mid_second = r.resnet(mid + "resnets.1", dims[0], dims[0]);
  const size_t levels = cfg.dim_mult.size();
  for (size_t i = 0; i < levels; ++i) {
    const std::string p = "decoder.up_blocks." + std::to_string(i);
    // After the first level the input is the previous upsampler's output: half its channels, except in the
    // Wan2.2 VAE, whose upsamplers keep them.
    int64_t in = i == 0 || cfg.is_residual ? dims[i] : dims[i] / 2;
    const int64_t out = dims[i + 1];
    wan::UpBlock blk;
    for (int j = 0; j <= cfg.num_res_blocks; ++j, in = out)
      blk.resnets.push_back(r.resnet(p + ".resnets." + std::to_string(j), in, out));
    if (i + 1 < levels) {
      const std::string u = p + (cfg.is_residual ? ".upsampler." : ".upsamplers.0.");
      const int64_t up_out = cfg.is_residual ? out : out / 2;
      wan::Upsampler up{w.take(u + "resample.1.weight", {up_out, out, 3, 3}), w.take(u + "resample.1.bias", {up_out}),
                        std::nullopt};
      // The decoder's levels double time in the reverse order of the encoder's halving.
      const bool doubles_time = cfg.temperal_downsample[levels - 2 - i];
      if (doubles_time) up.time_conv = r.conv(u + "time_conv", out, 2 * out, {3, 1, 1});
      blk.up = std::move(up);
      if (cfg.is_residual) blk.shortcut = wan::RepeatUp{out, doubles_time ? 2 : 1, 2};
    }
    d->up_blocks.push_back(std::move(blk));
  }
  d->norm_out = r.norm("decoder.norm_out", dims.back(), 4);
  d->conv_out = r.conv("decoder.conv_out", dims.back(), cfg.out_channels, {3, 3, 3});
  d->slots = r.slots;
  return d;
}

at::Tensor WanVae::Decoder::operator()(const at::Tensor& z, wan::DecodeState& s) const {
  auto x = conv_in(post_quant_conv(z, s), s);
  x = mid_second(mid_attention(mid_first(x, s), s), s);
  for (const auto& blk : up_blocks) {
    const auto input = x;
    for (const auto& r : blk.resnets) x = r(x, s);
    if (blk.up) x = (*blk.up)(x, s);
    if (blk.shortcut) x = x + (*blk.shortcut)(input, s.first_chunk);
  }
  return conv_out(at::silu(norm_out(x)), s);
}

}  // namespace studio::models

#include "plan/families/wan_vae_config.h"

#include <algorithm>
#include <cmath>

#include "plan/decoder_flops.h"
#include "plan/json_fields.h"

namespace studio::plan {

namespace {

// diffusers' defaults for latents_mean and latents_std (Wan2.1's VAE).
const std::vector<double> kMean{-0.7571, -0.7089, -0.9113, 0.1075, -0.1745, 0.9653, -0.1517, 1.5508,
                                0.4134,  -0.0715, 0.5517,  -0.3632, -0.1922, -0.9497, 0.2503,  -0.2921};
const std::vector<double> kStd{2.8184, 1.4541, 2.3275, 2.6558, 1.2196, 1.7708, 2.6052, 2.0743,
                               3.2687, 2.1526, 2.8652, 1.5579, 1.6382, 1.1253, 2.8251, 1.9160};

std::vector<double> number_list(const Fields& f, const char* key, std::vector<double> fallback) {
  if (!f.has(key)) return fallback;
  const auto& v = f.raw()[key];
  if (!v.is_array()) f.fail(key, f.dump(key), "must be a list of numbers");
  std::vector<double> out;
  for (const auto& x : v) {
    if (!x.is_number() || !std::isfinite(x.get<double>())) f.fail(key, f.dump(key), "must be a list of numbers");
    out.push_back(x.get<double>());
  }
  return out;
}

}  // namespace

int WanVaeConfig::temporal_compression() const {
  int r = 1;
  for (bool t : temperal_downsample) r *= t ? 2 : 1;
  return r;
}

std::vector<int> WanVaeConfig::decoder_dims() const {
  std::vector<int> dims{decoder_base_dim * dim_mult.back()};
  for (auto m = dim_mult.rbegin(); m != dim_mult.rend(); ++m) dims.push_back(decoder_base_dim * *m);
  return dims;
}

WanVaeConfig parse_wan_vae_config(const std::string& text, const std::string& file) {
  Fields f(text, file);
  expect_class(f, file.c_str(), {"AutoencoderKLWan"});
  WanVaeConfig c;
  c.base_dim = f.positive("base_dim", c.base_dim, 4096);
  c.decoder_base_dim = f.positive("decoder_base_dim", c.base_dim, 4096);
  c.z_dim = f.positive("z_dim", c.z_dim, 4096);
  c.dim_mult = f.positive_list("dim_mult", c.dim_mult, 64, 8);
  c.num_res_blocks = f.in_range("num_res_blocks", c.num_res_blocks, 0, 64);
  c.attn_scales = number_list(f, "attn_scales", {});
  c.out_channels = f.positive("out_channels", c.out_channels, 4096);
  c.in_channels = f.positive("in_channels", c.in_channels, 4096);

  if (f.has("temperal_downsample")) {
    const auto& v = f.raw()["temperal_downsample"];
    if (!v.is_array()) f.fail("temperal_downsample", f.dump("temperal_downsample"), "must be a list of true/false");
    c.temperal_downsample.clear();
    for (const auto& x : v) {
      if (!x.is_boolean()) f.fail("temperal_downsample", f.dump("temperal_downsample"), "must be a list of true/false");
      c.temperal_downsample.push_back(x.get<bool>());
    }
  }
  if (c.temperal_downsample.size() + 1 != c.dim_mult.size())
    f.fail("temperal_downsample", f.dump("temperal_downsample"),
           "must have one entry per level that resamples: " + std::to_string(c.dim_mult.size() - 1) +
               " (dim_mult " + f.dump("dim_mult") + " has " + std::to_string(c.dim_mult.size()) + " levels)");
  for (int d : c.decoder_dims())
    if (d < 2)
      f.fail("decoder_base_dim", f.dump("decoder_base_dim"),
             "makes a decoder level of " + std::to_string(d) + " channel; each upsampler halves its channels");

  c.latents_mean = number_list(f, "latents_mean", kMean);
  c.latents_std = number_list(f, "latents_std", kStd);
  for (const char* key : {"latents_mean", "latents_std"}) {
    const auto& v = key == std::string("latents_mean") ? c.latents_mean : c.latents_std;
    if (int(v.size()) != c.z_dim)
      f.fail(key, f.dump(key), "must hold z_dim = " + std::to_string(c.z_dim) + " numbers, one per latent channel");
  }
  for (double s : c.latents_std)
    if (!(s > 0)) f.fail("latents_std", f.dump("latents_std"), "must hold positive numbers (a spread per channel)");

  c.is_residual = f.get<bool>("is_residual", false);
  if (f.has("patch_size") && f.dump("patch_size") != "null") {
    c.patch_size = f.in_range("patch_size", 1, 1, 2);
    if (c.patch_size > 1 && (c.in_channels % (c.patch_size * c.patch_size) || c.out_channels % (c.patch_size * c.patch_size)))
      f.fail("patch_size", f.dump("patch_size"), "needs in_channels and out_channels that hold whole patches (" +
                                                     std::to_string(c.patch_size * c.patch_size) + " values a channel)");
  }
  // The pipeline's frame and pixel arithmetic reads these; they must say what the levels do.
  const int spatial = f.get<int>("scale_factor_spatial", c.spatial_compression());
  if (spatial != c.spatial_compression())
    f.fail("scale_factor_spatial", f.dump("scale_factor_spatial"),
           "disagrees with the decoder's " + std::to_string(c.spatial_compression()) + " (2 per resampling level)");
  const int temporal = f.get<int>("scale_factor_temporal", c.temporal_compression());
  if (temporal != c.temporal_compression())
    f.fail("scale_factor_temporal", f.dump("scale_factor_temporal"),
           "disagrees with temperal_downsample's " + std::to_string(c.temporal_compression()) +
               " (2 per level marked true)");
  return c;
}


double WanVaeConfig::decoder_flops(int height, int width, int frames) const {
  // Latent frame by latent frame: the first makes one frame (its upsamplers skip their time convolution), each
  // next one temporal_compression() frames. An upsampler's 3x3 convolution runs after it doubles the pixels,
  // its time convolution (3 taps, twice the channels out) before. The middle attention is per frame.
  const auto dims = decoder_dims();
  const size_t levels = dim_mult.size();
  const int latent = (std::max(frames, 1) - 1) / temporal_compression() + 1;
  const double pixels = double(height / spatial_compression()) * (width / spatial_compression());
  DecoderFlops d;
  for (int chunk = 0; chunk < latent; ++chunk) {
    double level_pixels = pixels, f = 1;
    d.conv(pixels, 1, z_dim, z_dim);
    d.conv(pixels, 27, z_dim, dims[0]);
    d.resnet(pixels, 27, dims[0], dims[0]);
    d.attention(pixels, pixels * pixels, dims[0]);
    d.resnet(pixels, 27, dims[0], dims[0]);
    for (size_t i = 0; i < levels; ++i) {
      int in = i == 0 || is_residual ? dims[i] : dims[i] / 2;
      const int out = dims[i + 1];
      for (int j = 0; j <= num_res_blocks; ++j, in = out) d.resnet(level_pixels * f, 27, in, out);
      if (i + 1 == levels) break;
      if (temperal_downsample[levels - 2 - i] && chunk > 0) {
        d.conv(level_pixels * f, 3, out, 2 * out);
        f *= 2;
      }
      level_pixels *= 4;
      d.conv(level_pixels * f, 9, out, is_residual ? out : out / 2);
    }
    d.conv(level_pixels * f, 27, dims.back(), out_channels);
  }
  return d.total();
}

}  // namespace studio::plan

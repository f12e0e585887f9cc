#include "plan/families/hunyuan15_config.h"

#include <algorithm>

#include "plan/decoder_flops.h"
#include "plan/json_fields.h"

namespace studio::plan {

Hunyuan15TransformerConfig parse_hunyuan15_transformer_config(const std::string& text, const std::string& file) {
  Fields f(text, file);
  expect_class(f, file.c_str(), {"HunyuanVideo15Transformer3DModel"});
  Hunyuan15TransformerConfig c;
  c.out_channels = f.positive("out_channels", c.out_channels, 4096);
  c.in_channels = f.positive("in_channels", c.in_channels, 8192);
  c.num_attention_heads = f.positive("num_attention_heads", c.num_attention_heads, 1024);
  c.attention_head_dim = f.positive("attention_head_dim", c.attention_head_dim, 1024);
  c.num_layers = f.in_range("num_layers", c.num_layers, 0, 1024);
  c.num_refiner_layers = f.in_range("num_refiner_layers", c.num_refiner_layers, 0, 64);
  c.mlp_ratio = f.get<double>("mlp_ratio", c.mlp_ratio);
  c.patch_size = f.positive("patch_size", c.patch_size, 64);
  c.patch_size_t = f.positive("patch_size_t", c.patch_size_t, 64);
  c.text_embed_dim = f.positive("text_embed_dim", c.text_embed_dim, 65536);
  c.text_embed_2_dim = f.positive("text_embed_2_dim", c.text_embed_2_dim, 65536);
  c.image_embed_dim = f.positive("image_embed_dim", c.image_embed_dim, 65536);
  c.rope_theta = f.get<double>("rope_theta", c.rope_theta);
  c.rope_axes_dim = f.positive_list("rope_axes_dim", c.rope_axes_dim, 1024, 8);
  c.task_type = f.get<std::string>("task_type", c.task_type);
  c.target_size = f.positive("target_size", c.target_size, 8192);
  if (!(c.mlp_ratio > 0 && c.mlp_ratio <= 16))
    f.fail("mlp_ratio", f.dump("mlp_ratio"), "must be above 0 and at most 16 (4 in the published models)");
  if (!(c.rope_theta > 0)) f.fail("rope_theta", f.dump("rope_theta"), "must be positive (256 in the published models)");
  if (f.get<std::string>("qk_norm", "rms_norm") != "rms_norm")
    f.fail("qk_norm", f.dump("qk_norm"), "is not supported; HunyuanVideo-1.5 uses rms_norm");
  if (f.get<bool>("use_meanflow", false))
    f.fail("use_meanflow", "true", "is not supported yet (the super-resolution models' second timestep)");
  if (c.task_type != "t2v" && c.task_type != "i2v")
    f.fail("task_type", f.dump("task_type"), "must be t2v or i2v");
  int rope = 0;
  for (int d : c.rope_axes_dim) {
    if (d % 2) f.fail("rope_axes_dim", f.dump("rope_axes_dim"), "must hold even widths (rotated pairs)");
    rope += d;
  }
  if (c.rope_axes_dim.size() != 3 || rope != c.attention_head_dim)
    f.fail("rope_axes_dim", f.dump("rope_axes_dim"),
           "must be three widths (frame, row, column) adding up to attention_head_dim " +
               std::to_string(c.attention_head_dim));
  if (c.patch_size != 1 || c.patch_size_t != 1)
    f.fail(c.patch_size != 1 ? "patch_size" : "patch_size_t",
           std::to_string(c.patch_size != 1 ? c.patch_size : c.patch_size_t),
           "is not supported; HunyuanVideo-1.5 uses 1 (its VAE compresses 16x)");
  if (c.in_channels != 2 * c.out_channels + 1)
    f.fail("in_channels", std::to_string(c.in_channels),
           "must be 2 x out_channels + 1 (the latents, the picture's latents and its mask): " +
               std::to_string(2 * c.out_channels + 1));
  return c;
}

namespace {

int log2_of(int v) {
  int n = 0;
  while ((1 << n) < v) ++n;
  return n;
}

}  // namespace

double parse_hunyuan15_guidance_scale(const std::string& text, const std::string& file) {
  Fields f(text, file);
  expect_class(f, file.c_str(), {"ClassifierFreeGuidance"});
  const double scale = f.get<double>("guidance_scale", 6.0);
  if (!(scale >= 0 && scale <= 100)) f.fail("guidance_scale", f.dump("guidance_scale"), "must be 0 to 100");
  if (f.get<double>("guidance_rescale", 0.0) != 0.0)
    f.fail("guidance_rescale", f.dump("guidance_rescale"), "is not supported; HunyuanVideo-1.5 leaves it 0");
  if (f.get<bool>("use_original_formulation", false))
    f.fail("use_original_formulation", "true", "is not supported; HunyuanVideo-1.5 leaves it false");
  if (f.get<double>("start", 0.0) != 0.0 || f.get<double>("stop", 1.0) != 1.0)
    f.fail("start", f.dump("start"), "and stop must be 0 and 1 (guidance on every step), as HunyuanVideo-1.5 sets them");
  return f.get<bool>("enabled", true) ? scale : 1.0;
}

int Hunyuan15VaeConfig::spatial_upsamples() const { return log2_of(spatial_compression_ratio); }
int Hunyuan15VaeConfig::temporal_upsamples() const { return log2_of(temporal_compression_ratio); }

int64_t Hunyuan15VaeConfig::decoder_parameters() const {
  const std::vector<int64_t> ch(block_out_channels.rbegin(), block_out_channels.rend());
  auto conv = [](int64_t in, int64_t out, int64_t k) { return out * in * k * k * k + out; };
  auto resnet = [&](int64_t in, int64_t out) {
    return in + out + conv(in, out, 3) + conv(out, out, 3) + (in != out ? conv(in, out, 1) : 0);
  };
  int64_t n = conv(latent_channels, ch[0], 3) + 2 * resnet(ch[0], ch[0]) + ch[0] + 4 * conv(ch[0], ch[0], 1);
  int64_t in = ch[0];
  for (size_t i = 0; i < ch.size(); ++i) {
    for (int j = 0; j <= layers_per_block; ++j) n += resnet(j == 0 ? in : ch[i], ch[i]);
    in = ch[i];
    if (int(i) < spatial_upsamples()) {
      n += conv(ch[i], ch[i + 1] * (int(i) < temporal_upsamples() ? 8 : 4), 3);
      in = ch[i + 1];
    }
  }
  return n + ch.back() + conv(ch.back(), out_channels, 3);
}

Hunyuan15VaeConfig parse_hunyuan15_vae_config(const std::string& text, const std::string& file) {
  Fields f(text, file);
  expect_class(f, file.c_str(), {"AutoencoderKLHunyuanVideo15"});
  Hunyuan15VaeConfig c;
  c.in_channels = f.positive("in_channels", c.in_channels, 16);
  c.latent_channels = f.positive("latent_channels", c.latent_channels, 1024);
  c.out_channels = f.positive("out_channels", c.out_channels, 16);
  c.block_out_channels = f.positive_list("block_out_channels", c.block_out_channels, 8192, 16);
  c.layers_per_block = f.positive("layers_per_block", c.layers_per_block, 16);
  c.spatial_compression_ratio = f.positive("spatial_compression_ratio", c.spatial_compression_ratio, 64);
  c.temporal_compression_ratio = f.positive("temporal_compression_ratio", c.temporal_compression_ratio, 16);
  c.scaling_factor = f.get<double>("scaling_factor", c.scaling_factor);
  if (!(c.scaling_factor > 0)) f.fail("scaling_factor", f.dump("scaling_factor"), "must be positive");
  for (const char* key : {"spatial_compression_ratio", "temporal_compression_ratio"}) {
    const int v = f.get<int>(key, 1);
    if (v & (v - 1)) f.fail(key, std::to_string(v), "must be a power of two (each up block doubles)");
  }
  const auto& ch = c.block_out_channels;
  if (int(ch.size()) <= c.spatial_upsamples() || c.temporal_upsamples() > c.spatial_upsamples())
    f.fail("block_out_channels", f.dump("block_out_channels"),
           "needs more levels than log2(spatial_compression_ratio) " + std::to_string(c.spatial_upsamples()) +
               ", which must be at least log2(temporal_compression_ratio)");
  for (const char* key : {"upsample_match_channel", "downsample_match_channel"})
    if (!f.get<bool>(key, true)) f.fail(key, "false", "is not supported; HunyuanVideo-1.5 sets it true");
  // The decoder repeats the latents over its first channels and each upsampler its input over its output's;
  // the encoder's output averages groups of its last channels into the moments (2 x latent_channels).
  if (ch.back() % (2 * c.latent_channels))
    f.fail("block_out_channels", f.dump("block_out_channels"),
           "must end with a multiple of 2 x latent_channels " + std::to_string(2 * c.latent_channels));
  for (size_t i = ch.size() - 1; i > 0 && int(ch.size() - 1 - i) < c.spatial_upsamples(); --i)
    if ((4 * ch[i - 1]) % ch[i])
      f.fail("block_out_channels", f.dump("block_out_channels"),
             "has levels whose upsampler cannot repeat its input over its output's channels");
  // Each of the encoder's downsamplers makes out / 4 channels per pixel (out / 8 when it halves the frames
  // too) and averages groups of 4 in / out of its input's (8 in / out).
  for (int i = 0; i < c.spatial_upsamples(); ++i) {
    const int factor = i >= c.spatial_upsamples() - c.temporal_upsamples() ? 8 : 4;
    if (ch[i + 1] % factor || (4 * ch[i]) % ch[i + 1])
      f.fail("block_out_channels", f.dump("block_out_channels"),
             "has levels whose downsampler cannot average its input over its output's channels");
  }
  return c;
}


double Hunyuan15VaeConfig::decoder_flops(int height, int width, int frames) const {
  // One pass over every frame. An upsampler's convolution runs before it unpacks channels into pixels (and
  // frames: all but the first doubled); the middle attention is causal, each frame's pixels seeing its own
  // and the earlier frames'.
  const std::vector<int> ch(block_out_channels.rbegin(), block_out_channels.rend());
  double pixels = double(height / spatial_compression_ratio) * (width / spatial_compression_ratio);
  double f = (std::max(frames, 1) - 1) / temporal_compression_ratio + 1;
  DecoderFlops d;
  d.conv(pixels * f, 27, latent_channels, ch[0]);
  d.resnet(pixels * f, 27, ch[0], ch[0]);
  d.attention(pixels * f, pixels * pixels * f * (f + 1) / 2, ch[0]);
  d.resnet(pixels * f, 27, ch[0], ch[0]);
  int in = ch[0];
  for (size_t i = 0; i < ch.size(); ++i) {
    for (int j = 0; j <= layers_per_block; ++j, in = ch[i]) d.resnet(pixels * f, 27, in, ch[i]);
    if (int(i) >= spatial_upsamples()) continue;
    const bool temporal = int(i) < temporal_upsamples();
    d.conv(pixels * f, 27, ch[i], ch[i + 1] * (temporal ? 8 : 4));
    pixels *= 4;
    if (temporal) f = 2 * f - 1;
    in = ch[i + 1];
  }
  d.conv(pixels * f, 27, ch.back(), out_channels);
  return d.total();
}

}  // namespace studio::plan

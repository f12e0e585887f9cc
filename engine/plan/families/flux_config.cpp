#include "plan/families/flux_config.h"

#include <algorithm>

#include "plan/decoder_flops.h"
#include "plan/json_fields.h"

namespace studio::plan {

FluxTransformerConfig parse_flux_transformer_config(const std::string& text, const std::string& file) {
  Fields f(text, file);
  expect_class(f, file.c_str(), {"FluxTransformer2DModel"});
  FluxTransformerConfig c;
  if (f.get<int>("patch_size", 1) != 1)
    f.fail("patch_size", f.dump("patch_size"), "is not supported; FLUX.1 uses 1 (its pipeline packs 2x2)");
  c.in_channels = f.positive("in_channels", c.in_channels, 4096);
  c.out_channels = f.positive("out_channels", c.in_channels, 4096);
  c.num_layers = f.in_range("num_layers", c.num_layers, 0, 1024);
  c.num_single_layers = f.in_range("num_single_layers", c.num_single_layers, 0, 1024);
  c.attention_head_dim = f.positive("attention_head_dim", c.attention_head_dim, 1024);
  c.num_attention_heads = f.positive("num_attention_heads", c.num_attention_heads, 1024);
  c.joint_attention_dim = f.positive("joint_attention_dim", c.joint_attention_dim, 65536);
  c.pooled_projection_dim = f.positive("pooled_projection_dim", c.pooled_projection_dim, 65536);
  c.guidance_embeds = f.get<bool>("guidance_embeds", false);
  c.axes_dims_rope = f.positive_list("axes_dims_rope", c.axes_dims_rope, 1024, 8);
  int rope = 0;
  for (int d : c.axes_dims_rope) {
    if (d % 2) f.fail("axes_dims_rope", f.dump("axes_dims_rope"), "must hold even widths (rotated pairs)");
    rope += d;
  }
  if (c.axes_dims_rope.size() != 3 || rope != c.attention_head_dim)
    f.fail("axes_dims_rope", f.dump("axes_dims_rope"),
           "must be three widths (position id, row, column) adding up to attention_head_dim " +
               std::to_string(c.attention_head_dim));
  if (c.in_channels % 4)
    f.fail("in_channels", std::to_string(c.in_channels), "must be 4 x the latent channels (2x2 packing)");
  return c;
}

FlowMatchConfig parse_flow_match_config(const std::string& text, const std::string& file) {
  Fields f(text, file);
  expect_class(f, file.c_str(), {"FlowMatchEulerDiscreteScheduler"});
  FlowMatchConfig s;
  s.num_train_timesteps = f.positive("num_train_timesteps", s.num_train_timesteps, 100000);
  s.shift = f.get<double>("shift", s.shift);
  s.use_dynamic_shifting = f.get<bool>("use_dynamic_shifting", s.use_dynamic_shifting);
  s.base_shift = f.get<double>("base_shift", s.base_shift);
  s.max_shift = f.get<double>("max_shift", s.max_shift);
  s.base_image_seq_len = f.positive("base_image_seq_len", s.base_image_seq_len, 1 << 24);
  s.max_image_seq_len = f.positive("max_image_seq_len", s.max_image_seq_len, 1 << 24);
  if (!(s.shift > 0)) f.fail("shift", std::to_string(s.shift), "must be positive");
  if (s.max_image_seq_len == s.base_image_seq_len && s.use_dynamic_shifting)
    f.fail("max_image_seq_len", std::to_string(s.max_image_seq_len), "must differ from base_image_seq_len");
  for (const char* unsupported : {"use_karras_sigmas", "use_exponential_sigmas", "use_beta_sigmas", "invert_sigmas"})
    if (f.get<bool>(unsupported, false)) f.fail(unsupported, "true", "is not supported; FLUX.1 leaves it false");
  if (f.has("shift_terminal"))
    f.fail("shift_terminal", f.dump("shift_terminal"), "is not supported; FLUX.1 leaves it null");
  return s;
}

AutoencoderKLConfig parse_autoencoder_kl_config(const std::string& text, const std::string& file) {
  Fields f(text, file);
  expect_class(f, file.c_str(), {"AutoencoderKL"});
  AutoencoderKLConfig v;
  v.out_channels = f.positive("out_channels", v.out_channels, 4096);
  // Missing fields take diffusers' AutoencoderKL defaults, not FLUX's values.
  v.latent_channels = f.positive("latent_channels", 4, 4096);
  v.layers_per_block = f.positive("layers_per_block", 1, 64);
  v.norm_num_groups = f.positive("norm_num_groups", 32, 1024);
  v.block_out_channels = f.positive_list("block_out_channels", {64}, 16384, 8);
  for (int c : v.block_out_channels)
    if (c % v.norm_num_groups)
      f.fail("block_out_channels", f.dump("block_out_channels"), "must be multiples of norm_num_groups");
  v.scaling_factor = f.get<double>("scaling_factor", 0.18215);
  v.shift_factor = f.get<double>("shift_factor", 0.0);
  v.sample_size = f.positive("sample_size", 32, 16384);
  v.mid_block_add_attention = f.get<bool>("mid_block_add_attention", true);
  if (!(v.scaling_factor > 0)) f.fail("scaling_factor", std::to_string(v.scaling_factor), "must be positive");
  for (const char* unsupported : {"use_quant_conv", "use_post_quant_conv"})
    if (f.get<bool>(unsupported, true))  // diffusers' default is true
      f.fail(unsupported, f.has(unsupported) ? "true" : "(absent: true by default)",
             "is not supported yet; FLUX.1's VAE sets it false");
  for (const char* unsupported : {"latents_mean", "latents_std"})
    if (f.has(unsupported)) f.fail(unsupported, f.dump(unsupported), "is not supported; FLUX.1 leaves it null");
  auto act = f.get<std::string>("act_fn", "silu");
  if (act != "silu") f.fail("act_fn", "\"" + act + "\"", "is not supported; FLUX.1's VAE uses \"silu\"");
  for (const char* key : {"up_block_types"})
    if (f.has(key))
      for (const auto& t : f.raw()[key])
        if (t != "UpDecoderBlock2D") f.fail(key, f.dump(key), "must list only \"UpDecoderBlock2D\"");
  return v;
}


double AutoencoderKLConfig::decoder_flops(int height, int width, int) const {
  // 3x3 convolutions; the middle attention is one head over every pixel of the latents; an upsampler's
  // convolution runs after it doubles the pixels.
  const std::vector<int> ch(block_out_channels.rbegin(), block_out_channels.rend());
  double pixels = double(height / spatial_compression()) * (width / spatial_compression());
  DecoderFlops d;
  d.conv(pixels, 9, latent_channels, ch[0]);
  d.resnet(pixels, 9, ch[0], ch[0]);
  if (mid_block_add_attention) d.attention(pixels, pixels * pixels, ch[0]);
  d.resnet(pixels, 9, ch[0], ch[0]);
  int in = ch[0];
  for (size_t i = 0; i < ch.size(); ++i) {
    for (int j = 0; j <= layers_per_block; ++j, in = ch[i]) d.resnet(pixels, 9, in, ch[i]);
    if (i + 1 == ch.size()) break;
    pixels *= 4;
    d.conv(pixels, 9, ch[i], ch[i]);
  }
  d.conv(pixels, 9, ch.back(), out_channels);
  return d.total();
}

}  // namespace studio::plan

#include "plan/families/cogvideox_config.h"

#include <algorithm>

#include "plan/decoder_flops.h"
#include "plan/json_fields.h"

namespace studio::plan {

const char* sampler_name(CogVideoXSampler k) {
  return k == CogVideoXSampler::DDIM ? "CogVideoXDDIMScheduler" : "CogVideoXDPMScheduler";
}

CogVideoXTransformerConfig parse_cogvideox_transformer_config(const std::string& text, const std::string& file) {
  Fields f(text, file);
  expect_class(f, file.c_str(), {"CogVideoXTransformer3DModel"});
  CogVideoXTransformerConfig c;
  c.num_attention_heads = f.positive("num_attention_heads", c.num_attention_heads, 1024);
  c.attention_head_dim = f.positive("attention_head_dim", c.attention_head_dim, 1024);
  c.in_channels = f.positive("in_channels", c.in_channels, 4096);
  c.out_channels = f.positive("out_channels", c.in_channels, 4096);
  c.flip_sin_to_cos = f.get<bool>("flip_sin_to_cos", c.flip_sin_to_cos);
  c.freq_shift = f.get<int>("freq_shift", c.freq_shift);
  c.time_embed_dim = f.positive("time_embed_dim", c.time_embed_dim, 65536);
  c.text_embed_dim = f.positive("text_embed_dim", c.text_embed_dim, 65536);
  c.num_layers = f.positive("num_layers", c.num_layers, 1024);
  c.attention_bias = f.get<bool>("attention_bias", c.attention_bias);
  c.sample_width = f.positive("sample_width", c.sample_width, 16384);
  c.sample_height = f.positive("sample_height", c.sample_height, 16384);
  c.sample_frames = f.positive("sample_frames", c.sample_frames, 100000);
  c.patch_size = f.positive("patch_size", c.patch_size, 16);
  if (f.has("patch_size_t")) c.patch_size_t = f.positive("patch_size_t", 1, 16);
  c.temporal_compression_ratio = f.positive("temporal_compression_ratio", c.temporal_compression_ratio, 64);
  c.max_text_seq_length = f.positive("max_text_seq_length", c.max_text_seq_length, 65536);
  c.norm_elementwise_affine = f.get<bool>("norm_elementwise_affine", c.norm_elementwise_affine);
  c.norm_eps = f.get<double>("norm_eps", c.norm_eps);
  c.spatial_interpolation_scale = f.get<double>("spatial_interpolation_scale", c.spatial_interpolation_scale);
  c.temporal_interpolation_scale = f.get<double>("temporal_interpolation_scale", c.temporal_interpolation_scale);
  c.use_rotary_positional_embeddings =
      f.get<bool>("use_rotary_positional_embeddings", c.use_rotary_positional_embeddings);
  c.patch_bias = f.get<bool>("patch_bias", c.patch_bias);

  // Fields the real checkpoints set to one value; anything else is a model this engine cannot run yet.
  auto act = f.get<std::string>("activation_fn", "gelu-approximate");
  if (act != "gelu-approximate")
    f.fail("activation_fn", "\"" + act + "\"", "is not supported; CogVideoX uses \"gelu-approximate\"");
  auto tact = f.get<std::string>("timestep_activation_fn", "silu");
  if (tact != "silu") f.fail("timestep_activation_fn", "\"" + tact + "\"", "is not supported; CogVideoX uses \"silu\"");
  c.ofs_embed_dim = f.has("ofs_embed_dim") ? f.positive("ofs_embed_dim", 0, 65536) : 0;
  if (c.ofs_embed_dim && c.ofs_embed_dim != c.time_embed_dim)
    f.fail("ofs_embed_dim", f.dump("ofs_embed_dim"),
           "must equal time_embed_dim (" + std::to_string(c.time_embed_dim) + "): the ofs embedding is added to the "
           "timestep's");
  c.use_learned_positional_embeddings = f.get<bool>("use_learned_positional_embeddings", false);
  if (c.use_learned_positional_embeddings && !c.use_rotary_positional_embeddings)
    f.fail("use_learned_positional_embeddings", "true",
           "is not supported without use_rotary_positional_embeddings (no CogVideoX checkpoint has learned positions "
           "alone; CogVideoX-5b-I2V has both)");
  if (c.in_channels != c.out_channels && c.in_channels != 2 * c.out_channels)
    f.fail("in_channels", std::to_string(c.in_channels),
           "must be out_channels (" + std::to_string(c.out_channels) + ", text-to-video) or twice it (image-to-video: "
           "the noise, then the picture's latents)");
  if (c.inner_dim() % 16 != 0 && !c.use_rotary_positional_embeddings)
    f.fail("num_attention_heads", std::to_string(c.num_attention_heads),
           "times attention_head_dim must be divisible by 16 for 3D sin-cos positions");
  if (c.use_rotary_positional_embeddings && c.attention_head_dim % 8 != 0)
    f.fail("attention_head_dim", std::to_string(c.attention_head_dim), "must be divisible by 8 for 3D RoPE");
  if (c.patch_size_t && !c.use_rotary_positional_embeddings)
    f.fail("patch_size_t", std::to_string(*c.patch_size_t),
           "is set but use_rotary_positional_embeddings is false; CogVideoX 1.5 uses RoPE");
  return c;
}

CogVideoXSchedulerConfig parse_cogvideox_scheduler_config(const std::string& text, const std::string& file) {
  Fields f(text, file);
  expect_class(f, file.c_str(), {"CogVideoXDDIMScheduler", "CogVideoXDPMScheduler"});
  CogVideoXSchedulerConfig s;
  s.kind = f.get<std::string>("_class_name", "") == "CogVideoXDPMScheduler" ? CogVideoXSampler::DPM : CogVideoXSampler::DDIM;
  s.num_train_timesteps = f.positive("num_train_timesteps", s.num_train_timesteps, 100000);
  s.beta_start = f.get<double>("beta_start", s.beta_start);
  s.beta_end = f.get<double>("beta_end", s.beta_end);
  s.beta_schedule = f.get<std::string>("beta_schedule", s.beta_schedule);
  if (s.beta_schedule != "scaled_linear" && s.beta_schedule != "linear")
    f.fail("beta_schedule", "\"" + s.beta_schedule + "\"", "is not supported; use \"scaled_linear\" or \"linear\"");
  if (f.has("trained_betas")) f.fail("trained_betas", "(a list)", "is not supported; use beta_start/beta_end");
  if (f.get<bool>("clip_sample", false)) f.fail("clip_sample", "true", "is not supported; CogVideoX uses false");
  if (f.get<bool>("thresholding", false)) f.fail("thresholding", "true", "is not supported; CogVideoX uses false");
  auto pred = f.get<std::string>("prediction_type", "v_prediction");
  if (pred != "v_prediction")
    f.fail("prediction_type", "\"" + pred + "\"", "is not supported; CogVideoX uses \"v_prediction\"");
  s.set_alpha_to_one = f.get<bool>("set_alpha_to_one", s.set_alpha_to_one);
  s.steps_offset = f.get<int>("steps_offset", s.steps_offset);
  s.timestep_spacing = f.get<std::string>("timestep_spacing", s.timestep_spacing);
  if (s.timestep_spacing != "trailing" && s.timestep_spacing != "leading" && s.timestep_spacing != "linspace")
    f.fail("timestep_spacing", "\"" + s.timestep_spacing + "\"", "is not one of \"trailing\", \"leading\", \"linspace\"");
  s.rescale_betas_zero_snr = f.get<bool>("rescale_betas_zero_snr", false);
  s.snr_shift_scale = f.get<double>("snr_shift_scale", 3.0);  // the diffusers class default
  if (!(s.snr_shift_scale > 0)) f.fail("snr_shift_scale", std::to_string(s.snr_shift_scale), "must be positive");
  return s;
}

CogVideoXVaeConfig parse_cogvideox_vae_config(const std::string& text, const std::string& file) {
  Fields f(text, file);
  expect_class(f, file.c_str(), {"AutoencoderKLCogVideoX"});
  CogVideoXVaeConfig v;
  v.scaling_factor = f.get<double>("scaling_factor", v.scaling_factor);
  v.latent_channels = f.positive("latent_channels", v.latent_channels, 4096);
  v.out_channels = f.positive("out_channels", v.out_channels, 4096);
  v.temporal_compression_ratio = f.positive("temporal_compression_ratio", v.temporal_compression_ratio, 64);
  if (v.temporal_compression_ratio != 1 && v.temporal_compression_ratio != 2 && v.temporal_compression_ratio != 4)
    f.fail("temporal_compression_ratio", std::to_string(v.temporal_compression_ratio), "must be 1, 2 or 4");
  v.layers_per_block = f.positive("layers_per_block", v.layers_per_block, 64);
  v.norm_num_groups = f.positive("norm_num_groups", v.norm_num_groups, 1024);
  v.norm_eps = f.get<double>("norm_eps", v.norm_eps);
  v.block_out_channels = f.positive_list("block_out_channels", v.block_out_channels, 16384, 8);
  for (int c : v.block_out_channels)
    if (c % v.norm_num_groups != 0)
      f.fail("block_out_channels", f.dump("block_out_channels"), "must be multiples of norm_num_groups");
  v.spatial_compression = 1 << (v.block_out_channels.size() - 1);
  for (const char* unsupported : {"shift_factor", "latents_mean", "latents_std"})
    if (f.has(unsupported))
      f.fail(unsupported, f.dump(unsupported), "is set; CogVideoX VAEs leave it null and this engine does too");
  v.in_channels = f.positive("in_channels", v.in_channels, 4096);
  v.invert_scale_latents = f.get<bool>("invert_scale_latents", false);
  for (const char* unsupported : {"use_quant_conv", "use_post_quant_conv"})
    if (f.get<bool>(unsupported, false))
      f.fail(unsupported, "true", "is not supported; CogVideoX VAEs set it false");
  auto act = f.get<std::string>("act_fn", "silu");
  if (act != "silu") f.fail("act_fn", "\"" + act + "\"", "is not supported; CogVideoX uses \"silu\"");
  return v;
}


double CogVideoXVaeConfig::decoder_flops(int height, int width, int frames) const {
  // Batches of two latent frames (an odd count's first batch three). Each level's time upsampler doubles the
  // frames but keeps an odd first one single; its 3x3 convolution runs after the upsampling.
  const std::vector<int> ch(block_out_channels.rbegin(), block_out_channels.rend());
  const int latent = (std::max(frames, 1) - 1) / temporal_compression_ratio + 1;
  const int batches = std::max(latent / 2, 1);
  int time_levels = 0;
  for (int r = temporal_compression_ratio; r > 1; r /= 2) ++time_levels;
  const double pixels = double(height / spatial_compression) * (width / spatial_compression);
  DecoderFlops d;
  for (int b = 0; b < batches; ++b) {
    const int f = b == 0 ? latent - 2 * (batches - 1) : 2;
    // Every spatial norm makes its scale and shift from the batch's latents, at their size.
    const auto norm = [&](int c) { d.conv(pixels * f, 1, latent_channels, 2 * c); };
    const auto resnet = [&](double points, int in, int out) {
      norm(in), norm(out);
      d.resnet(points, 27, in, out);
    };
    double points = pixels * f, level_pixels = pixels;
    int level_frames = f;
    d.conv(points, 27, latent_channels, ch[0]);
    for (int i = 0; i < 2; ++i) resnet(points, ch[0], ch[0]);
    int in = ch[0];
    for (size_t i = 0; i < ch.size(); ++i) {
      for (int j = 0; j <= layers_per_block; ++j, in = ch[i]) resnet(points, in, ch[i]);
      if (i + 1 == ch.size()) break;
      if (int(i) < time_levels && level_frames > 1) level_frames = 2 * level_frames - level_frames % 2;
      level_pixels *= 4;
      points = level_pixels * level_frames;
      d.conv(points, 9, ch[i], ch[i]);
    }
    norm(ch.back());
    d.conv(points, 27, ch.back(), out_channels);
  }
  return d.total();
}

}  // namespace studio::plan

// A CogVideoX folder's configs (CogVideoXPipeline of diffusers 0.32.2), read from JSON alone.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "plan/model_folder.h"

namespace studio::plan {

// transformer/config.json of a CogVideoXTransformer3DModel.
struct CogVideoXTransformerConfig {
  int num_attention_heads = 30;
  int attention_head_dim = 64;
  int in_channels = 16;
  int out_channels = 16;
  bool flip_sin_to_cos = true;
  int freq_shift = 0;
  int time_embed_dim = 512;
  int text_embed_dim = 4096;
  int num_layers = 30;
  bool attention_bias = true;
  int sample_width = 90;   // latent pixels
  int sample_height = 60;  // latent pixels
  int sample_frames = 49;  // video frames (diffusers' convention)
  int patch_size = 2;
  std::optional<int> patch_size_t;  // set for CogVideoX 1.5
  int temporal_compression_ratio = 4;
  int max_text_seq_length = 226;
  bool norm_elementwise_affine = true;
  double norm_eps = 1e-5;
  double spatial_interpolation_scale = 1.875;
  double temporal_interpolation_scale = 1.0;
  bool use_rotary_positional_embeddings = false;
  bool patch_bias = true;
  // Image-to-video (in_channels twice out_channels: the noise, then the picture's latents): CogVideoX-5B-I2V's
  // learned position table over the text slots and the sample size's video tokens, and CogVideoX1.5-I2V's
  // embedding of the pipeline's `ofs` (0: none).
  bool use_learned_positional_embeddings = false;
  int ofs_embed_dim = 0;
  // The video tokens of the sample size (the learned table's rows after the text's).
  int sample_tokens() const {
    const int frames = (sample_frames - 1) / temporal_compression_ratio + 1;
    return (sample_height / patch_size) * (sample_width / patch_size) * (frames / patch_size_t.value_or(1));
  }

  int inner_dim() const { return num_attention_heads * attention_head_dim; }
};

enum class CogVideoXSampler { DDIM, DPM };
const char* sampler_name(CogVideoXSampler k);

// scheduler/scheduler_config.json of CogVideoXDDIMScheduler / CogVideoXDPMScheduler.
struct CogVideoXSchedulerConfig {
  CogVideoXSampler kind = CogVideoXSampler::DDIM;
  int num_train_timesteps = 1000;
  double beta_start = 0.00085;
  double beta_end = 0.012;
  std::string beta_schedule = "scaled_linear";  // or "linear"
  bool set_alpha_to_one = true;
  int steps_offset = 0;
  std::string timestep_spacing = "trailing";  // "trailing", "leading" or "linspace"
  bool rescale_betas_zero_snr = true;
  double snr_shift_scale = 1.0;
};

// vae/config.json of AutoencoderKLCogVideoX.
struct CogVideoXVaeConfig {
  double scaling_factor = 1.15258426;
  int latent_channels = 16;
  int out_channels = 3;
  int temporal_compression_ratio = 4;
  int spatial_compression = 8;  // 2^(number of blocks - 1)
  std::vector<int> block_out_channels{128, 256, 256, 512};
  int layers_per_block = 3;
  int norm_num_groups = 32;
  double norm_eps = 1e-6;
  int in_channels = 3;                // the encoder's
  bool invert_scale_latents = false;  // CogVideoX1.5-I2V: the picture's latents are divided by scaling_factor
  // The FLOPs of decoding one video of `frames` frames (an image: 1) at `height` x `width` pixels, as
  // models/cogvideox/cogvideox_vae.cpp decodes it (plan/decoder_flops.h).
  double decoder_flops(int height, int width, int frames) const;
};

// transformer/, scheduler/ and vae/ (when present) of a CogVideoXPipeline folder.
struct CogVideoXParts final : FamilyParts {
  CogVideoXTransformerConfig transformer;
  CogVideoXSchedulerConfig scheduler;
  std::optional<CogVideoXVaeConfig> vae;
};

CogVideoXTransformerConfig parse_cogvideox_transformer_config(const std::string& json_text, const std::string& file);
CogVideoXSchedulerConfig parse_cogvideox_scheduler_config(const std::string& json_text, const std::string& file);
CogVideoXVaeConfig parse_cogvideox_vae_config(const std::string& json_text, const std::string& file);

}  // namespace studio::plan

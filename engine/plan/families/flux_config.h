// The config files of a FLUX.1 folder (FluxPipeline of diffusers v0.32.2), read from JSON alone: the
// transformer, the flow-matching scheduler and the 2D VAE.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "plan/clip_config.h"
#include "plan/model_folder.h"

namespace studio::plan {

// transformer/config.json of a FluxTransformer2DModel.
struct FluxTransformerConfig {
  int in_channels = 64;  // 16 latent channels packed 2x2
  int out_channels = 64;
  int num_layers = 19;          // double-stream blocks
  int num_single_layers = 38;   // single-stream blocks
  int attention_head_dim = 128;
  int num_attention_heads = 24;
  int joint_attention_dim = 4096;   // T5's width
  int pooled_projection_dim = 768;  // CLIP's width
  bool guidance_embeds = true;      // FLUX.1-dev; schnell has none
  std::vector<int> axes_dims_rope{16, 56, 56};
  int inner_dim() const { return num_attention_heads * attention_head_dim; }
};

// scheduler/scheduler_config.json of a FlowMatchEulerDiscreteScheduler.
struct FlowMatchConfig {
  int num_train_timesteps = 1000;
  double shift = 1.0;
  bool use_dynamic_shifting = false;  // shift by mu, from the image's token count
  double base_shift = 0.5, max_shift = 1.15;
  int base_image_seq_len = 256, max_image_seq_len = 4096;
};

// vae/config.json of an AutoencoderKL (the decoder half is what the engine runs).
struct AutoencoderKLConfig {
  int out_channels = 3;
  int latent_channels = 16;
  std::vector<int> block_out_channels{128, 256, 512, 512};
  int layers_per_block = 2;
  int norm_num_groups = 32;
  double scaling_factor = 0.3611;
  double shift_factor = 0.0;
  int sample_size = 1024;  // pixels: diffusers' tile size when tiling
  bool mid_block_add_attention = true;
  int spatial_compression() const { return 1 << (block_out_channels.size() - 1); }
  // The FLOPs of decoding one video of `frames` frames (an image: 1) at `height` x `width` pixels, as
  // models/vae/autoencoder_kl.cpp decodes it (plan/decoder_flops.h).
  double decoder_flops(int height, int width, int frames) const;
};

FluxTransformerConfig parse_flux_transformer_config(const std::string& json_text, const std::string& file);
FlowMatchConfig parse_flow_match_config(const std::string& json_text, const std::string& file);
AutoencoderKLConfig parse_autoencoder_kl_config(const std::string& json_text, const std::string& file);

// The parts of a FLUX.1 folder (FluxPipeline) the engine runs.
struct FluxParts final : FamilyParts {
  FluxTransformerConfig transformer;
  FlowMatchConfig scheduler;
  std::optional<AutoencoderKLConfig> vae;
  std::optional<ClipTextConfig> clip;  // text_encoder/: the pooled vector
  bool has_clip_tokenizer = false;      // tokenizer/vocab.json and merges.txt
};

}  // namespace studio::plan

// A diffusers model folder read from its JSON files alone (no weights, no LibTorch), so the GUI,
// the launcher and the engine share one reading of what a checkpoint is and what it supports.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "plan/clip_config.h"
#include "plan/flux_config.h"
#include "plan/wan_config.h"
#include "plan/wan_vae_config.h"

namespace studio::plan {

enum class Family { CogVideoX_2B, CogVideoX_5B, CogVideoX_15, Flux_Dev, Flux_Schnell, Wan21, Wan22 };
const char* family_name(Family f);

// transformer/config.json of a CogVideoXTransformer3DModel.
struct TransformerConfig {
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

  int inner_dim() const { return num_attention_heads * attention_head_dim; }
  Family family() const;
};

enum class SamplerKind { DDIM, DPM };
const char* sampler_name(SamplerKind k);

// scheduler/scheduler_config.json of CogVideoXDDIMScheduler / CogVideoXDPMScheduler.
struct SchedulerConfig {
  SamplerKind kind = SamplerKind::DDIM;
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
struct VaeConfig {
  double scaling_factor = 1.15258426;
  int latent_channels = 16;
  int out_channels = 3;
  int temporal_compression_ratio = 4;
  int spatial_compression = 8;  // 2^(number of blocks - 1)
  std::vector<int> block_out_channels{128, 256, 256, 512};
  int layers_per_block = 3;
  int norm_num_groups = 32;
  double norm_eps = 1e-6;
};

// text_encoder/config.json of a T5EncoderModel (T5 v1.1: gated-GELU feed-forward, no biases) or of a
// UMT5EncoderModel (Wan's umT5: the same layers, each with its own relative position bias table).
struct T5Config {
  int d_model = 4096;
  int d_kv = 64;
  int num_heads = 64;
  int d_ff = 10240;
  int num_layers = 24;
  int relative_attention_num_buckets = 32;
  int relative_attention_max_distance = 128;
  double layer_norm_epsilon = 1e-6;
  int vocab_size = 32128;
  bool per_layer_bias = false;  // model_type "umt5": every layer's relative_attention_bias, not layer 0's alone

  double parameters() const;  // the weights' count: 4.7B for T5 v1.1 XXL's encoder
};

// The parts of a FLUX.1 folder (FluxPipeline) the engine runs.
struct FluxParts {
  FluxTransformerConfig transformer;
  FlowMatchConfig scheduler;
  std::optional<AutoencoderKLConfig> vae;
  std::optional<ClipTextConfig> clip;  // text_encoder/: the pooled vector
  bool has_clip_tokenizer = false;      // tokenizer/vocab.json and merges.txt
};

// The parts of a Wan2.1 / Wan2.2 text-to-video folder (WanPipeline).
struct WanParts {
  WanTransformerConfig transformer;
  // Wan2.2's low-noise expert: it takes over below boundary_ratio * num_train_timesteps.
  std::optional<WanTransformerConfig> transformer_2;
  double boundary_ratio = 0;
  UniPCConfig scheduler;
  std::optional<WanVaeConfig> vae;
};

struct ModelFolder {
  std::string dir;
  Family family = Family::CogVideoX_2B;
  // A CogVideoX folder (CogVideoXPipeline): these three.
  TransformerConfig transformer;
  SchedulerConfig scheduler;
  std::optional<VaeConfig> vae;
  // A FLUX.1 folder (FluxPipeline): this.
  std::optional<FluxParts> flux;
  // A Wan folder (WanPipeline): this.
  std::optional<WanParts> wan;
  std::optional<T5Config> text_encoder;  // the T5 encoder's config, when present
  bool has_tokenizer = false;             // T5's spiece.model
  // Where T5 and its tokenizer live: text_encoder/ and tokenizer/ (CogVideoX), the _2 folders (FLUX.1).
  std::string t5_part() const { return flux ? "text_encoder_2" : "text_encoder"; }
  std::string t5_tokenizer_part() const { return flux ? "tokenizer_2" : "tokenizer"; }
  // Whether every encoder that words need is here.
  bool can_encode_words() const {
    return has_tokenizer && text_encoder && (!flux || (flux->clip && flux->has_clip_tokenizer));
  }

  bool has_vae() const { return flux ? flux->vae.has_value() : wan ? wan->vae.has_value() : vae.has_value(); }
  int vae_scale_spatial() const {
    if (flux) return flux->vae ? flux->vae->spatial_compression() : 8;
    if (wan) return wan->vae ? wan->vae->spatial_compression() : 8;
    return vae ? vae->spatial_compression : 8;
  }
  int vae_scale_temporal() const {
    if (wan) return wan->vae ? wan->vae->temporal_compression() : 4;
    return vae ? vae->temporal_compression_ratio : 4;
  }
};

// What words need and the folder lacks: "no tokenizer_2/ (spiece.model), no text_encoder/ (CLIP)"; "" if nothing.
std::string missing_text_parts(const ModelFolder& m);
// A Hugging Face repository of the folder's family, for messages that say how to get a whole folder.
std::string example_repo(const ModelFolder& m);

// Reads and checks model_index.json and each part's config. Throws InputError naming the file and
// field for anything missing, malformed or not supported yet.
ModelFolder read_model_folder(const std::string& dir);

TransformerConfig parse_transformer_config(const std::string& json_text, const std::string& file);
SchedulerConfig parse_scheduler_config(const std::string& json_text, const std::string& file);
VaeConfig parse_vae_config(const std::string& json_text, const std::string& file);
T5Config parse_t5_config(const std::string& json_text, const std::string& file);

// Reads a whole (small) file; InputError if it cannot be read or is larger than max_bytes.
std::string read_text_file(const std::string& path, size_t max_bytes = 16u << 20);
// Writes a small file whole or not at all (under a temporary name, then renamed); InputError names `what`
// ("the job file") and why it could not be written.
void write_text_file(const std::string& path, const std::string& text, const std::string& what);

}  // namespace studio::plan

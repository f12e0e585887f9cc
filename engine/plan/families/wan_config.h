// The config files of a Wan2.1 / Wan2.2 text-to-video folder (WanPipeline of diffusers 0.35.2) that the
// transformer and the sampler read, from JSON alone: transformer/config.json (and transformer_2/'s) and
// scheduler/scheduler_config.json.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "plan/clip_config.h"
#include "plan/families/wan_vae_config.h"
#include "plan/model_folder.h"

namespace studio::plan {

// transformer/config.json of a WanTransformer3DModel. Missing fields take diffusers' defaults (Wan2.1-T2V-14B's
// shape). Image-to-video: in_channels exceeds out_channels by the condition's (mask and picture latents),
// and Wan2.1 I2V adds an image embedding (image_dim) that the cross-attention reads with its own keys and
// values (added_kv_proj_dim); FLF2V's two pictures get learned positions (pos_embed_seq_len).
struct WanTransformerConfig {
  std::vector<int> patch_size{1, 2, 2};  // frames, rows, columns
  int num_attention_heads = 40;
  int attention_head_dim = 128;
  int in_channels = 16;
  int out_channels = 16;
  int text_dim = 4096;  // umT5's width
  int freq_dim = 256;   // the sinusoidal timestep embedding's
  int ffn_dim = 13824;
  int num_layers = 40;
  bool cross_attn_norm = true;  // a LayerNorm (affine) before the cross-attention
  double eps = 1e-6;
  int rope_max_seq_len = 1024;  // RoPE positions per axis
  int image_dim = 0;            // the image encoder's width; 0: no image tokens
  int added_kv_proj_dim = 0;    // the image tokens' key/value projections' input; 0: none
  int pos_embed_seq_len = 0;    // learned positions of the image tokens (FLF2V: 2 x 257); 0: none
  // Wan2.2 TI2V-5B: model_index.json's expand_timesteps (a pipeline field, copied here as the folder is read):
  // a timestep per token, so that a picture, when given, replaces the first latent frame, whose tokens are
  // told they are clean (timestep 0).
  bool expand_timesteps = false;
  int inner_dim() const { return num_attention_heads * attention_head_dim; }
  int patch_volume() const { return patch_size[0] * patch_size[1] * patch_size[2]; }
};

// scheduler/scheduler_config.json of a UniPCMultistepScheduler in Wan's flow configuration.
struct UniPCConfig {
  int num_train_timesteps = 1000;
  double flow_shift = 1.0;
  int solver_order = 2;  // 1 or 2
  bool bh1 = false;      // solver_type "bh1" (B(h) = h), else "bh2" (B(h) = e^h - 1)
  std::vector<int> disable_corrector;  // step indices after which the corrector does not run
};

WanTransformerConfig parse_wan_transformer_config(const std::string& json_text, const std::string& file);
UniPCConfig parse_unipc_config(const std::string& json_text, const std::string& file);

// The parts of a Wan2.1 / Wan2.2 folder: text-to-video (WanPipeline) or image-to-video
// (WanImageToVideoPipeline; Wan2.1's with a CLIP image encoder, Wan2.2 I2V-A14B's without).
struct WanParts final : FamilyParts {
  WanTransformerConfig transformer;
  // Wan2.2's low-noise expert: it takes over below boundary_ratio * num_train_timesteps.
  std::optional<WanTransformerConfig> transformer_2;
  double boundary_ratio = 0;
  UniPCConfig scheduler;
  std::optional<WanVaeConfig> vae;
  std::optional<ClipVisionConfig> image_encoder;  // with image_processor, where transformer's image_dim is set
  std::optional<ClipImageProcessorConfig> image_processor;
  // The picture enters as channels of the transformer's input: it needs one.
  bool image_to_video() const { return transformer.in_channels > transformer.out_channels; }
};

}  // namespace studio::plan

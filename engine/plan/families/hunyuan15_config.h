// The transformer config of a HunyuanVideo-1.5 folder (HunyuanVideo15Pipeline of diffusers v0.42.1), read
// from JSON alone.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plan/clip_config.h"
#include "plan/families/flux_config.h"  // FlowMatchConfig
#include "plan/model_folder.h"
#include "plan/llm_config.h"

namespace studio::plan {

// transformer/config.json of a HunyuanVideo15Transformer3DModel.
struct Hunyuan15TransformerConfig {
  int in_channels = 65;   // latents, the picture's latents, and a mask channel: 2 x latent + 1
  int out_channels = 32;  // the latent channels
  int num_attention_heads = 16;
  int attention_head_dim = 128;
  int num_layers = 54;          // dual-stream blocks
  int num_refiner_layers = 2;   // the Qwen tokens' refiner blocks
  double mlp_ratio = 4.0;
  int patch_size = 1, patch_size_t = 1;
  int text_embed_dim = 3584;    // Qwen2.5-VL's width
  int text_embed_2_dim = 1472;  // ByT5's width
  int image_embed_dim = 1152;   // SigLIP's width
  double rope_theta = 256.0;
  std::vector<int> rope_axes_dim{16, 56, 56};  // frame, row, column
  std::string task_type = "i2v";
  int target_size = 640;  // pixels: the default size's area is about target_size^2 (480 x 848 at 640)
  int inner_dim() const { return num_attention_heads * attention_head_dim; }
  int mlp_dim() const { return int(inner_dim() * mlp_ratio); }
};

// vae/config.json of an AutoencoderKLHunyuanVideo15: the decoder, and the encoder of image-to-video's picture.
struct Hunyuan15VaeConfig {
  int in_channels = 3;
  int latent_channels = 32;
  int out_channels = 3;
  std::vector<int> block_out_channels{128, 256, 512, 1024, 1024};  // the encoder's order; the decoder reverses it
  int layers_per_block = 2;
  int spatial_compression_ratio = 16;
  int temporal_compression_ratio = 4;
  double scaling_factor = 1.03682;
  // Up blocks that double the pixels (the first log2(spatial) ones) and the frames (the first log2(temporal)).
  // The encoder's down blocks halve them in the mirror order: the pixels in the first log2(spatial), the frames
  // in the last log2(temporal) of those.
  int spatial_upsamples() const;
  int temporal_upsamples() const;
  // The decoder's weights, counted as models/hunyuan15/hunyuan15_vae.cpp loads them (the plan's VAE memory).
  int64_t decoder_parameters() const;
  // The FLOPs of decoding one video of `frames` frames (an image: 1) at `height` x `width` pixels, as
  // models/hunyuan15/hunyuan15_vae.cpp decodes it (plan/decoder_flops.h).
  double decoder_flops(int height, int width, int frames) const;
};

// guider/guider_config.json of a ClassifierFreeGuidance: the scale the pipeline guides with (1 turns CFG off).
double parse_hunyuan15_guidance_scale(const std::string& json_text, const std::string& file);

// The Qwen hidden state the pipeline reads: hidden_states[-3] (num_hidden_layers_to_skip 2), so the last two
// layers and the final norm never run and are not loaded.
constexpr int kQwenHiddenState = -3;

// The parts of a HunyuanVideo-1.5 folder (HunyuanVideo15Pipeline) the engine runs.
struct Hunyuan15Parts final : FamilyParts {
  Hunyuan15TransformerConfig transformer;
  FlowMatchConfig scheduler;
  std::optional<Hunyuan15VaeConfig> vae;
  double guidance_scale = 6.0;           // the guider's
  std::optional<LlmTextConfig> qwen;    // text_encoder/
  bool has_qwen_tokenizer = false;       // tokenizer/tokenizer.json
  // Image-to-video (task_type i2v): SigLIP (image_encoder/) and its processor (feature_extractor/).
  std::optional<ClipVisionConfig> image_encoder;
  std::optional<SiglipImageProcessorConfig> image_processor;
  bool image_to_video() const { return transformer.task_type == "i2v"; }
  // The Qwen layers that run: those before hidden state kQwenHiddenState (read_parts checks it exists).
  int qwen_layers() const { return qwen->layers_for(kQwenHiddenState); }
};

Hunyuan15TransformerConfig parse_hunyuan15_transformer_config(const std::string& json_text, const std::string& file);
Hunyuan15VaeConfig parse_hunyuan15_vae_config(const std::string& json_text, const std::string& file);

}  // namespace studio::plan

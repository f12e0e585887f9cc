// CLIP's configs (transformers), read from JSON alone with transformers' defaults for absent fields:
// text_encoder/config.json of a CLIPTextModel (FLUX.1's first text encoder), and image_encoder/config.json
// and image_processor/preprocessor_config.json of a CLIPVisionModel(WithProjection) with its
// CLIPImageProcessor (Wan2.1 image-to-video's picture encoder); SigLIP's alike (HunyuanVideo-1.5's).
#pragma once
#include <string>
#include <vector>

namespace studio::plan {

struct ClipTextConfig {
  int vocab_size = 49408;
  int hidden_size = 512;
  int intermediate_size = 2048;
  int num_hidden_layers = 12;
  int num_attention_heads = 8;
  int max_position_embeddings = 77;
  double layer_norm_eps = 1e-5;
  std::string hidden_act = "quick_gelu";  // or "gelu"
  int eos_token_id = 49407;  // 2 (FLUX.1's config): the pooled token is the one with the highest id

  double parameters() const;  // 123M for CLIP ViT-L/14's text model
};

ClipTextConfig parse_clip_text_config(const std::string& json_text, const std::string& file);

struct ClipVisionConfig {
  int hidden_size = 768;
  int intermediate_size = 3072;
  int num_hidden_layers = 12;
  int num_attention_heads = 12;
  int image_size = 224;
  int patch_size = 32;
  double layer_norm_eps = 1e-5;
  std::string hidden_act = "quick_gelu";  // or "gelu", "gelu_pytorch_tanh" (SigLIP)
  bool class_token = true;                // CLIP's; SigLIP has none
  int tokens() const { return (image_size / patch_size) * (image_size / patch_size) + (class_token ? 1 : 0); }
};

ClipVisionConfig parse_clip_vision_config(const std::string& json_text, const std::string& file);
// image_encoder/config.json of a SiglipVisionModel (HunyuanVideo-1.5 image-to-video): CLIP's vision fields,
// no class token, tanh GELU by default.
ClipVisionConfig parse_siglip_vision_config(const std::string& json_text, const std::string& file);

// SiglipImageProcessor: resized to height x width (bicubic, not kept in proportion), x rescale, normalised.
struct SiglipImageProcessorConfig {
  int height = 384, width = 384;
  double rescale_factor = 1.0 / 255;
  std::vector<double> mean{0.5, 0.5, 0.5}, std{0.5, 0.5, 0.5};
};

SiglipImageProcessorConfig parse_siglip_image_processor_config(const std::string& json_text, const std::string& file);

// CLIPImageProcessor: resize so the shortest edge is `shortest_edge` (bicubic), center crop, x rescale, normalise.
struct ClipImageProcessorConfig {
  int shortest_edge = 224;
  int crop_height = 224, crop_width = 224;
  double rescale_factor = 1.0 / 255;
  std::vector<double> mean{0.48145466, 0.4578275, 0.40821073}, std{0.26862954, 0.26130258, 0.27577711};
};

ClipImageProcessorConfig parse_clip_image_processor_config(const std::string& json_text, const std::string& file);

}  // namespace studio::plan

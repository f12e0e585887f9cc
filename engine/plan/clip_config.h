// text_encoder/config.json of a CLIPTextModel (transformers), FLUX.1's first text encoder: read from JSON
// alone, with transformers' defaults for absent fields.
#pragma once
#include <string>

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

}  // namespace studio::plan

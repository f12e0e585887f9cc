// The T5 text encoder's config, read from JSON alone: CogVideoX's and FLUX.1's T5 v1.1 XXL, Wan's umT5.
#pragma once
#include <string>

namespace studio::plan {

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

T5Config parse_t5_config(const std::string& json_text, const std::string& file);

}  // namespace studio::plan

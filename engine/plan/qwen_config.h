// The config of a Qwen2 / Qwen2.5 / Qwen3 language model used as a text encoder (HunyuanVideo-1.5's Qwen2.5-VL
// text model), read from JSON alone. Gemma 3 differs from them in ways docs/text-encoders.md lists.
#pragma once
#include <string>

namespace studio::plan {

// text_encoder/config.json of a Qwen2_5_VLTextModel (model_type "qwen2_5_vl_text"), of a whole Qwen2.5-VL model
// (its "text_config"), of a Qwen2 model, or of a Qwen3 model. Defaults: Qwen2.5-VL-7B-Instruct's language model.
struct QwenTextConfig {
  int hidden_size = 3584;
  int num_hidden_layers = 28;
  int num_attention_heads = 28;
  int num_key_value_heads = 4;  // grouped-query attention: query head h reads key/value head h / (heads / kv)
  int intermediate_size = 18944;
  int vocab_size = 152064;
  double rms_norm_eps = 1e-6;
  double rope_theta = 1e6;
  int head_dim_field = 0;    // Qwen3's head_dim, which need not be hidden_size / heads (0: that quotient)
  bool qkv_bias = true;      // biases on q, k and v (Qwen2's always; Qwen3's attention_bias)
  bool o_bias = false;       // a bias on the output projection (Qwen3's attention_bias)
  bool qk_norm = false;      // Qwen3: an RMS norm over each head of q and of k, before RoPE
  int head_dim() const { return head_dim_field ? head_dim_field : hidden_size / num_attention_heads; }
  // The layers that compute hidden state `index` (transformers' hidden_states[index]; negative from the end, -1
  // the last, after the final norm): the ones before it. std::out_of_range for no such hidden state.
  int layers_for(int index) const;
  bool has_hidden_state(int index) const;  // whether layers_for(index) has an answer
  // The weights' count with the first `layers` layers (7.1B for Qwen2.5-VL-7B's language model, all, without its
  // head); the final norm is a rounding error.
  double parameters(int layers) const;
  double parameters() const { return parameters(num_hidden_layers); }
};

QwenTextConfig parse_qwen_text_config(const std::string& json_text, const std::string& file);

}  // namespace studio::plan

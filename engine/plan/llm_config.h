// The config of a decoder-only language model used as a text encoder, read from JSON alone: Qwen2 / Qwen2.5
// (HunyuanVideo-1.5's Qwen2.5-VL text model), Qwen3 and Gemma 3 (LTX-2's). docs/text-encoders.md lists how they
// differ.
#pragma once
#include <string>
#include <vector>

namespace studio::plan {

// text_encoder/config.json of a Qwen2_5_VLTextModel (model_type "qwen2_5_vl_text"), of a whole Qwen2.5-VL model
// (its "text_config"), of a Qwen2 or Qwen3 model, or of Gemma 3's language model ("gemma3_text", or a whole
// "gemma3" model's "text_config"). Defaults: Qwen2.5-VL-7B-Instruct's language model.
struct LlmTextConfig {
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
  bool qk_norm = false;      // Qwen3, Gemma 3: an RMS norm over each head of q and of k, before RoPE
  // Gemma 3: embeddings times sqrt(hidden_size), norms that multiply by 1 + weight, a norm on the attention's and on
  // the MLP's output too, the MLP gated by tanh-GELU.
  bool gemma = false;
  double query_pre_attn_scalar = 0;  // Gemma 3: scores scaled by its -1/2 power (0: head_dim's)
  double rope_linear_factor = 1;     // positions divided by it (RoPE "linear"; Gemma 3's global layers)
  // Gemma 3's layers of local attention: a query sees the `sliding_window` tokens up to and including itself, with
  // RoPE at its own base. Empty: every layer attends to every token before it.
  std::vector<bool> sliding_layers;
  int sliding_window = 0;
  double sliding_rope_theta = 0;
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

LlmTextConfig parse_llm_text_config(const std::string& json_text, const std::string& file);

}  // namespace studio::plan

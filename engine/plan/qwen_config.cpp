#include "plan/qwen_config.h"

#include <stdexcept>

#include "plan/json_fields.h"

namespace studio::plan {

namespace {

// Hidden state `index` of a model of `layers` layers counted from the front (-1: the last of layers + 1).
int from_front(int index, int layers) { return index < 0 ? index + layers + 1 : index; }

}  // namespace

bool QwenTextConfig::has_hidden_state(int index) const {
  const int i = from_front(index, num_hidden_layers);
  return i >= 0 && i <= num_hidden_layers;
}

int QwenTextConfig::layers_for(int index) const {
  if (!has_hidden_state(index))
    throw std::out_of_range("Qwen: no hidden state " + std::to_string(index) + " of " +
                            std::to_string(num_hidden_layers + 1));
  return from_front(index, num_hidden_layers);
}

double QwenTextConfig::parameters(int layers) const {
  const double d = hidden_size, q = double(num_attention_heads) * head_dim(), kv = double(num_key_value_heads) * head_dim();
  // The token table, then per layer q and o (d x q), k and v (d x kv) with their biases, the gated MLP's three.
  return double(vocab_size) * d +
         layers * (2 * d * q + 2 * d * kv + (qkv_bias ? q + 2 * kv : 0) + (o_bias ? d : 0) + 3 * d * intermediate_size);
}

QwenTextConfig parse_qwen_text_config(const std::string& text, const std::string& file) {
  const Fields top(text, file);
  const auto type = top.get<std::string>("model_type", "");
  // A whole Qwen2.5-VL config keeps the language model's fields under text_config.
  const Fields f = type == "qwen2_5_vl" && top.has("text_config") ? Fields(top.raw()["text_config"].dump(), file) : top;
  if (type != "qwen2_5_vl_text" && type != "qwen2_5_vl" && type != "qwen2" && type != "qwen3")
    top.fail("model_type", "\"" + type + "\"",
             "is not supported; the LLM text encoder reads Qwen2.5-VL's language model (\"qwen2_5_vl_text\"), Qwen2 "
             "(\"qwen2\") or Qwen3 (\"qwen3\")");
  QwenTextConfig c;
  c.hidden_size = f.positive("hidden_size", c.hidden_size, 65536);
  c.num_hidden_layers = f.positive("num_hidden_layers", c.num_hidden_layers, 1024);
  c.num_attention_heads = f.positive("num_attention_heads", c.num_attention_heads, 1024);
  c.num_key_value_heads = f.positive("num_key_value_heads", c.num_attention_heads, 1024);
  c.intermediate_size = f.positive("intermediate_size", c.intermediate_size, 1 << 20);
  c.vocab_size = f.positive("vocab_size", c.vocab_size, 1 << 22);
  c.rms_norm_eps = f.get<double>("rms_norm_eps", c.rms_norm_eps);
  // transformers 5 writes RoPE's settings as rope_parameters (its base inside), earlier ones rope_theta beside
  // rope_scaling.
  const char* rope = f.has("rope_parameters") ? "rope_parameters" : "rope_scaling";
  const auto& rope_settings = f.raw().contains(rope) ? f.raw()[rope] : nlohmann::json();
  if (rope_settings.is_object() && rope_settings.contains("rope_theta") && rope_settings["rope_theta"].is_number())
    c.rope_theta = rope_settings["rope_theta"].get<double>();
  c.rope_theta = f.get<double>("rope_theta", c.rope_theta);
  if (type == "qwen3") {  // Qwen3: heads of their own width, q/k norms, one switch for every projection's bias
    c.head_dim_field = f.positive("head_dim", c.hidden_size / c.num_attention_heads, 4096);
    c.qkv_bias = c.o_bias = f.get<bool>("attention_bias", false);
    c.qk_norm = true;
    if (c.head_dim_field % 2) f.fail("head_dim", f.dump("head_dim"), "must be even (RoPE turns pairs of values)");
  } else if (c.hidden_size % c.num_attention_heads || (c.hidden_size / c.num_attention_heads) % 2) {
    f.fail("num_attention_heads", f.dump("num_attention_heads"),
           "must divide hidden_size " + std::to_string(c.hidden_size) + " into heads of an even width");
  }
  // RoPE as the model was trained: plain, or Qwen2.5-VL's M-RoPE (plain for text); no scaled variant.
  if (f.has(rope)) {
    const auto& r = rope_settings;
    const auto kind_of = [&](const char* key) {
      return r.is_object() && r.contains(key) && r[key].is_string() ? r[key].get<std::string>() : std::string();
    };
    const std::string kind = r.is_object() && !r.contains("rope_type") && !r.contains("type") ? "default"
                             : kind_of("rope_type").empty()                                  ? kind_of("type")
                                                                                              : kind_of("rope_type");
    if (kind != "default" && kind != "mrope")
      f.fail(rope, r.dump(),
             "is not supported; the LLM text encoder runs unscaled RoPE (rope_type \"default\", or Qwen2.5-VL's "
             "\"mrope\"), as the text encoders of the families it serves are configured");
  }
  if (c.num_attention_heads % c.num_key_value_heads)
    f.fail("num_key_value_heads", f.dump("num_key_value_heads"),
           "must divide num_attention_heads " + std::to_string(c.num_attention_heads) + " (grouped-query attention)");
  const auto act = f.get<std::string>("hidden_act", "silu");
  if (act != "silu") f.fail("hidden_act", "\"" + act + "\"", "is not supported; Qwen2's MLP is gated by \"silu\"");
  if (f.get<bool>("use_sliding_window", false))
    f.fail("use_sliding_window", "true", "is not supported; Qwen2.5-VL's language model attends to every token");
  return c;
}

}  // namespace studio::plan

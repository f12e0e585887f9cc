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
  const double d = hidden_size, kv = double(num_key_value_heads) * head_dim();
  // The token table, then per layer q and o (d x d), k and v (d x kv, biases on q, k, v), the gated MLP's three.
  return double(vocab_size) * d + layers * (2 * d * d + 2 * d * kv + d + 2 * kv + 3 * d * intermediate_size);
}

QwenTextConfig parse_qwen_text_config(const std::string& text, const std::string& file) {
  const Fields top(text, file);
  const auto type = top.get<std::string>("model_type", "");
  // A whole Qwen2.5-VL config keeps the language model's fields under text_config.
  const Fields f = type == "qwen2_5_vl" && top.has("text_config") ? Fields(top.raw()["text_config"].dump(), file) : top;
  if (type != "qwen2_5_vl_text" && type != "qwen2_5_vl" && type != "qwen2")
    top.fail("model_type", "\"" + type + "\"",
             "is not supported; the LLM text encoder reads Qwen2.5-VL's language model (\"qwen2_5_vl_text\") or Qwen2");
  QwenTextConfig c;
  c.hidden_size = f.positive("hidden_size", c.hidden_size, 65536);
  c.num_hidden_layers = f.positive("num_hidden_layers", c.num_hidden_layers, 1024);
  c.num_attention_heads = f.positive("num_attention_heads", c.num_attention_heads, 1024);
  c.num_key_value_heads = f.positive("num_key_value_heads", c.num_attention_heads, 1024);
  c.intermediate_size = f.positive("intermediate_size", c.intermediate_size, 1 << 20);
  c.vocab_size = f.positive("vocab_size", c.vocab_size, 1 << 22);
  c.rms_norm_eps = f.get<double>("rms_norm_eps", c.rms_norm_eps);
  c.rope_theta = f.get<double>("rope_theta", c.rope_theta);
  if (c.hidden_size % c.num_attention_heads || (c.hidden_size / c.num_attention_heads) % 2)
    f.fail("num_attention_heads", f.dump("num_attention_heads"),
           "must divide hidden_size " + std::to_string(c.hidden_size) + " into heads of an even width");
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

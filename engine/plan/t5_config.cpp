#include "plan/t5_config.h"

#include "plan/json_fields.h"

namespace studio::plan {

double T5Config::parameters() const {
  // The embedding table, then per layer the four attention projections and the gated feed-forward's three.
  return double(vocab_size) * d_model + double(num_layers) * (4.0 * d_model * num_heads * d_kv + 3.0 * d_model * d_ff);
}

T5Config parse_t5_config(const std::string& text, const std::string& file) {
  Fields f(text, file);
  T5Config c;
  auto type = f.get<std::string>("model_type", "t5");
  if (type != "t5" && type != "umt5")
    f.fail("model_type", "\"" + type + "\"", "is not supported; the T5 text encoder is \"t5\" or \"umt5\"");
  c.per_layer_bias = type == "umt5";
  c.d_model = f.positive("d_model", c.d_model, 65536);
  c.d_kv = f.positive("d_kv", c.d_kv, 1024);
  c.num_heads = f.positive("num_heads", c.num_heads, 1024);
  c.d_ff = f.positive("d_ff", c.d_ff, 1 << 20);
  c.num_layers = f.positive("num_layers", c.num_layers, 1024);
  c.relative_attention_num_buckets = f.positive("relative_attention_num_buckets", c.relative_attention_num_buckets, 4096);
  c.relative_attention_max_distance = f.positive("relative_attention_max_distance", c.relative_attention_max_distance, 1 << 20);
  c.layer_norm_epsilon = f.get<double>("layer_norm_epsilon", c.layer_norm_epsilon);
  c.vocab_size = f.positive("vocab_size", c.vocab_size, 1 << 22);
  auto ff = f.get<std::string>("feed_forward_proj", "gated-gelu");
  if (ff != "gated-gelu")
    f.fail("feed_forward_proj", "\"" + ff + "\"", "is not supported; T5 v1.1 (CogVideoX's encoder) uses \"gated-gelu\"");
  auto act = f.get<std::string>("dense_act_fn", "gelu_new");
  if (act != "gelu_new") f.fail("dense_act_fn", "\"" + act + "\"", "is not supported; T5 v1.1 uses \"gelu_new\"");
  return c;
}

}  // namespace studio::plan

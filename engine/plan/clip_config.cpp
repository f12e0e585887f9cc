#include "plan/clip_config.h"

#include "plan/json_fields.h"

namespace studio::plan {

double ClipTextConfig::parameters() const {
  const double h = hidden_size, i = intermediate_size;
  // Token and position tables, then per layer attention (4 h^2 + 4 h), the MLP and two layer norms.
  return (double(vocab_size) + max_position_embeddings) * h +
         num_hidden_layers * (4 * h * h + 4 * h + 2 * h * i + i + h + 4 * h) + 2 * h;
}

ClipTextConfig parse_clip_text_config(const std::string& text, const std::string& file) {
  Fields f(text, file);
  ClipTextConfig c;
  auto type = f.get<std::string>("model_type", "clip_text_model");
  if (type != "clip_text_model")
    f.fail("model_type", "\"" + type + "\"", "is not supported; FLUX.1's text_encoder/ is \"clip_text_model\"");
  c.vocab_size = f.positive("vocab_size", c.vocab_size, 1 << 22);
  c.hidden_size = f.positive("hidden_size", c.hidden_size, 65536);
  c.intermediate_size = f.positive("intermediate_size", c.intermediate_size, 1 << 20);
  c.num_hidden_layers = f.positive("num_hidden_layers", c.num_hidden_layers, 1024);
  c.num_attention_heads = f.positive("num_attention_heads", c.num_attention_heads, 1024);
  c.max_position_embeddings = f.positive("max_position_embeddings", c.max_position_embeddings, 65536);
  c.layer_norm_eps = f.get<double>("layer_norm_eps", c.layer_norm_eps);
  c.eos_token_id = f.get<int>("eos_token_id", c.eos_token_id);
  c.hidden_act = f.get<std::string>("hidden_act", c.hidden_act);
  if (c.hidden_act != "quick_gelu" && c.hidden_act != "gelu")
    f.fail("hidden_act", "\"" + c.hidden_act + "\"", "is not supported; CLIP uses \"quick_gelu\" or \"gelu\"");
  if (c.hidden_size % c.num_attention_heads != 0)
    f.fail("hidden_size", std::to_string(c.hidden_size),
           "must be a multiple of num_attention_heads (" + std::to_string(c.num_attention_heads) + ")");
  return c;
}

}  // namespace studio::plan

#include "plan/llm_config.h"

#include <stdexcept>

#include "plan/json_fields.h"

namespace studio::plan {

namespace {

// Hidden state `index` of a model of `layers` layers counted from the front (-1: the last of layers + 1).
int from_front(int index, int layers) { return index < 0 ? index + layers + 1 : index; }

// One object of RoPE settings (rope_scaling, rope_parameters, or one of its entries per kind of layer): its base where
// it gives one, and its linear factor. A RoPE stretched otherwise (YaRN, dynamic, ...) is refused naming `field`.
void read_rope(const Fields& f, const std::string& field, const nlohmann::json& r, double& theta, double& factor) {
  if (!r.is_object()) f.fail(field.c_str(), r.dump(), "must be an object of RoPE settings");
  const auto text = [&](const char* key) {
    return r.contains(key) && r[key].is_string() ? r[key].get<std::string>() : std::string();
  };
  const std::string kind = !text("rope_type").empty() ? text("rope_type") : !text("type").empty() ? text("type") : "default";
  if (kind != "default" && kind != "mrope" && kind != "linear")
    f.fail(field.c_str(), r.dump(),
           "is not supported; the LLM text encoder runs RoPE unscaled (rope_type \"default\", Qwen2.5-VL's \"mrope\") "
           "or scaled \"linear\", as the text encoders of the families it serves are configured");
  if (r.contains("rope_theta") && r["rope_theta"].is_number()) theta = r["rope_theta"].get<double>();
  if (kind == "linear") {
    if (!r.contains("factor") || !r["factor"].is_number() || r["factor"].get<double>() <= 0)
      f.fail(field.c_str(), r.dump(), "is a linear RoPE scaling without a positive factor");
    factor = r["factor"].get<double>();
  }
}

// Gemma 3's language model (transformers' Gemma3TextConfig, defaults as its): heads 256 wide, scores scaled by
// query_pre_attn_scalar, five local layers to one global (or layer_types), RoPE per kind of layer.
void read_gemma(const Fields& f, LlmTextConfig& c) {
  c.gemma = c.qk_norm = true;
  c.qkv_bias = c.o_bias = f.get<bool>("attention_bias", false);
  c.head_dim_field = f.positive("head_dim", 256, 4096);
  c.query_pre_attn_scalar = f.positive("query_pre_attn_scalar", 256, 1 << 20);
  c.sliding_window = f.positive("sliding_window", 4096, 1 << 24);
  const auto act = f.get<std::string>("hidden_activation", "gelu_pytorch_tanh");
  if (act != "gelu_pytorch_tanh")
    f.fail("hidden_activation", "\"" + act + "\"", "is not supported; Gemma 3's MLP is gated by \"gelu_pytorch_tanh\"");
  if (f.has("attn_logit_softcapping"))
    f.fail("attn_logit_softcapping", f.dump("attn_logit_softcapping"), "is not supported (Gemma 2's; Gemma 3 has none)");
  if (f.get<bool>("use_bidirectional_attention", false))
    f.fail("use_bidirectional_attention", "true", "is not supported; the encoder runs Gemma 3 causal, as it was trained");
  if (f.has("layer_types")) {
    const auto& types = f.raw()["layer_types"];
    if (!types.is_array() || int(types.size()) != c.num_hidden_layers)
      f.fail("layer_types", types.dump(), "must list num_hidden_layers kinds of layer");
    for (const auto& t : types) {
      if (t != "sliding_attention" && t != "full_attention")
        f.fail("layer_types", t.dump(), "is not a kind of layer Gemma 3 has (\"sliding_attention\", \"full_attention\")");
      c.sliding_layers.push_back(t == "sliding_attention");
    }
  } else {  // every sliding_window_pattern-th layer global
    const int pattern = f.positive("sliding_window_pattern", f.positive("_sliding_window_pattern", 6, 1024), 1024);
    for (int i = 0; i < c.num_hidden_layers; ++i) c.sliding_layers.push_back((i + 1) % pattern != 0);
  }
  c.sliding_rope_theta = 10000;
  double sliding_factor = 1;
  if (f.has("rope_parameters") && f.raw()["rope_parameters"].contains("full_attention")) {  // transformers 5
    const auto& r = f.raw()["rope_parameters"];
    read_rope(f, "rope_parameters.full_attention", r["full_attention"], c.rope_theta, c.rope_linear_factor);
    if (r.contains("sliding_attention"))
      read_rope(f, "rope_parameters.sliding_attention", r["sliding_attention"], c.sliding_rope_theta, sliding_factor);
  } else {  // transformers 4: the global layers' base and scaling, the local layers' base
    if (f.has("rope_scaling")) read_rope(f, "rope_scaling", f.raw()["rope_scaling"], c.rope_theta, c.rope_linear_factor);
    c.rope_theta = f.get<double>("rope_theta", c.rope_theta);
    c.sliding_rope_theta = f.get<double>("rope_local_base_freq", c.sliding_rope_theta);
  }
  if (sliding_factor != 1)
    f.fail("rope_parameters.sliding_attention", "a linear factor", "is not supported on Gemma 3's local layers");
}

}  // namespace

bool LlmTextConfig::has_hidden_state(int index) const {
  const int i = from_front(index, num_hidden_layers);
  return i >= 0 && i <= num_hidden_layers;
}

int LlmTextConfig::layers_for(int index) const {
  if (!has_hidden_state(index))
    throw std::out_of_range("LLM text encoder: no hidden state " + std::to_string(index) + " of " +
                            std::to_string(num_hidden_layers + 1));
  return from_front(index, num_hidden_layers);
}

double LlmTextConfig::parameters(int layers) const {
  const double d = hidden_size, q = double(num_attention_heads) * head_dim(), kv = double(num_key_value_heads) * head_dim();
  // The token table, then per layer q and o (d x q), k and v (d x kv) with their biases, the gated MLP's three.
  return double(vocab_size) * d +
         layers * (2 * d * q + 2 * d * kv + (qkv_bias ? q + 2 * kv : 0) + (o_bias ? d : 0) + 3 * d * intermediate_size);
}

LlmTextConfig parse_llm_text_config(const std::string& text, const std::string& file) {
  const Fields top(text, file);
  const auto type = top.get<std::string>("model_type", "");
  // A whole Qwen2.5-VL or Gemma 3 config keeps the language model's fields under text_config.
  const bool whole = (type == "qwen2_5_vl" || type == "gemma3") && top.has("text_config");
  const Fields f = whole ? Fields(top.raw()["text_config"].dump(), file) : top;
  const bool gemma = type == "gemma3_text" || type == "gemma3";
  if (type != "qwen2_5_vl_text" && type != "qwen2_5_vl" && type != "qwen2" && type != "qwen3" && !gemma)
    top.fail("model_type", "\"" + type + "\"",
             "is not supported; the LLM text encoder reads Qwen2.5-VL's language model (\"qwen2_5_vl_text\"), Qwen2 "
             "(\"qwen2\"), Qwen3 (\"qwen3\") or Gemma 3's (\"gemma3_text\", or a whole \"gemma3\" model's)");
  LlmTextConfig c;
  if (gemma) {  // transformers 4 leaves out what equals Gemma3TextConfig's defaults (gemma-3-4b-it's heads, vocab)
    c.hidden_size = 2304, c.num_hidden_layers = 26, c.num_attention_heads = 8, c.num_key_value_heads = 4;
    c.intermediate_size = 9216, c.vocab_size = 262208;
  }
  c.hidden_size = f.positive("hidden_size", c.hidden_size, 65536);
  c.num_hidden_layers = f.positive("num_hidden_layers", c.num_hidden_layers, 1024);
  c.num_attention_heads = f.positive("num_attention_heads", c.num_attention_heads, 1024);
  c.num_key_value_heads = f.positive("num_key_value_heads", gemma ? c.num_key_value_heads : c.num_attention_heads, 1024);
  c.intermediate_size = f.positive("intermediate_size", c.intermediate_size, 1 << 20);
  c.vocab_size = f.positive("vocab_size", c.vocab_size, 1 << 22);
  c.rms_norm_eps = f.get<double>("rms_norm_eps", c.rms_norm_eps);
  if (c.num_attention_heads % c.num_key_value_heads)
    f.fail("num_key_value_heads", f.dump("num_key_value_heads"),
           "must divide num_attention_heads " + std::to_string(c.num_attention_heads) + " (grouped-query attention)");
  if (gemma) {
    read_gemma(f, c);
  } else {
    // transformers 5 writes RoPE's settings as rope_parameters (its base inside), earlier ones rope_theta beside
    // rope_scaling.
    const char* rope = f.has("rope_parameters") ? "rope_parameters" : "rope_scaling";
    if (f.has(rope)) read_rope(f, rope, f.raw()[rope], c.rope_theta, c.rope_linear_factor);
    c.rope_theta = f.get<double>("rope_theta", c.rope_theta);
    const auto act = f.get<std::string>("hidden_act", "silu");
    if (act != "silu") f.fail("hidden_act", "\"" + act + "\"", "is not supported; Qwen's MLP is gated by \"silu\"");
    if (f.get<bool>("use_sliding_window", false))
      f.fail("use_sliding_window", "true", "is not supported; Qwen2.5-VL's language model attends to every token");
  }
  if (type == "qwen3") {  // Qwen3: heads of their own width, q/k norms, one switch for every projection's bias
    c.head_dim_field = f.positive("head_dim", 128, 4096);  // Qwen3Config's default
    c.qkv_bias = c.o_bias = f.get<bool>("attention_bias", false);
    c.qk_norm = true;
  } else if (!gemma && c.hidden_size % c.num_attention_heads) {
    f.fail("num_attention_heads", f.dump("num_attention_heads"),
           "must divide hidden_size " + std::to_string(c.hidden_size) + " into heads");
  }
  if (c.head_dim() % 2)
    f.fail(c.head_dim_field ? "head_dim" : "num_attention_heads", std::to_string(c.head_dim()) + " wide heads",
           "must make heads of an even width (RoPE turns pairs of values)");
  return c;
}

}  // namespace studio::plan

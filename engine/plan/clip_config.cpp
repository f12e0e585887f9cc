#include "plan/clip_config.h"

#include "plan/json_fields.h"

namespace studio::plan {

namespace {

// The fields of CLIP's encoder layers, named alike in its text and vision configs.
template <class Config>
void read_layer_fields(const Fields& f, Config& c, int min_layers) {
  c.hidden_size = f.positive("hidden_size", c.hidden_size, 65536);
  c.intermediate_size = f.positive("intermediate_size", c.intermediate_size, 1 << 20);
  c.num_hidden_layers = f.in_range("num_hidden_layers", c.num_hidden_layers, min_layers, 1024);
  c.num_attention_heads = f.positive("num_attention_heads", c.num_attention_heads, 1024);
  c.layer_norm_eps = f.get<double>("layer_norm_eps", c.layer_norm_eps);
  c.hidden_act = f.get<std::string>("hidden_act", c.hidden_act);
  if (c.hidden_act != "quick_gelu" && c.hidden_act != "gelu" && c.hidden_act != "gelu_pytorch_tanh")
    f.fail("hidden_act", "\"" + c.hidden_act + "\"",
           "is not supported; CLIP uses \"quick_gelu\" or \"gelu\", SigLIP \"gelu_pytorch_tanh\"");
  if (c.hidden_size % c.num_attention_heads != 0)
    f.fail("hidden_size", std::to_string(c.hidden_size),
           "must be a multiple of num_attention_heads (" + std::to_string(c.num_attention_heads) + ")");
}

}  // namespace

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
  read_layer_fields(f, c, 1);
  c.max_position_embeddings = f.positive("max_position_embeddings", c.max_position_embeddings, 65536);
  c.eos_token_id = f.get<int>("eos_token_id", c.eos_token_id);
  return c;
}

namespace {

// The vision fields CLIP and SigLIP share; `type` the model_type expected, `min_layers` the layers its use needs.
ClipVisionConfig read_vision_config(const Fields& f, ClipVisionConfig c, const std::string& type, const char* who,
                                    int min_layers) {
  const auto given = f.get<std::string>("model_type", type);
  if (given != type) f.fail("model_type", "\"" + given + "\"", std::string("is not supported; ") + who + " is \"" + type + "\"");
  read_layer_fields(f, c, min_layers);
  c.image_size = f.positive("image_size", c.image_size, 8192);
  c.patch_size = f.positive("patch_size", c.patch_size, 8192);
  if (f.get<int>("num_channels", 3) != 3) f.fail("num_channels", f.dump("num_channels"), "must be 3 (RGB)");
  // CLIP's checkpoints divide evenly; SigLIP's convolution drops the remainder (384 / 14: 27 x 27 patches).
  if (c.class_token && c.image_size % c.patch_size != 0)
    f.fail("image_size", std::to_string(c.image_size),
           "must be a multiple of patch_size (" + std::to_string(c.patch_size) + ")");
  return c;
}

// mean and std: three numbers each, the std positive.
void read_mean_std(const Fields& f, std::vector<double>& mean, std::vector<double>& std_dev) {
  const auto& j = f.raw();
  for (auto [key, out] : {std::pair{"image_mean", &mean}, std::pair{"image_std", &std_dev}})
    if (f.has(key)) {
      const auto& v = j[key];
      if (!v.is_array() || v.size() != 3) f.fail(key, f.dump(key), "must be three numbers (R, G, B)");
      out->clear();
      for (const auto& x : v) {
        if (!x.is_number()) f.fail(key, f.dump(key), "must be three numbers (R, G, B)");
        out->push_back(x.get<double>());
      }
    }
  for (double s : std_dev)
    if (!(s > 0)) f.fail("image_std", f.dump("image_std"), "must be positive");
}

}  // namespace

ClipVisionConfig parse_clip_vision_config(const std::string& text, const std::string& file) {
  // hidden_states[-2] needs two layers at least
  return read_vision_config(Fields(text, file), {}, "clip_vision_model", "Wan2.1's image_encoder/", 2);
}

ClipVisionConfig parse_siglip_vision_config(const std::string& text, const std::string& file) {
  ClipVisionConfig c;
  // transformers' SiglipVisionConfig defaults for the fields a file leaves out.
  c.image_size = 224, c.patch_size = 16, c.layer_norm_eps = 1e-6, c.hidden_act = "gelu_pytorch_tanh";
  c.class_token = false;
  return read_vision_config(Fields(text, file), c, "siglip_vision_model", "HunyuanVideo-1.5's image_encoder/", 1);
}

SiglipImageProcessorConfig parse_siglip_image_processor_config(const std::string& text, const std::string& file) {
  Fields f(text, file);
  SiglipImageProcessorConfig c;
  for (const char* step : {"do_resize", "do_rescale", "do_normalize"})
    if (!f.get<bool>(step, true)) f.fail(step, "false", "is not supported: SigLIP's processor resizes, rescales and normalises");
  if (f.get<int>("resample", 3) != 3)
    f.fail("resample", f.dump("resample"), "is not supported; SigLIP's processor resizes bicubic (3)");
  const auto& j = f.raw();
  if (f.has("size")) {
    const auto& v = j["size"];
    if (!v.is_object() || !v.contains("height") || !v.contains("width") || !v["height"].is_number_integer() ||
        !v["width"].is_number_integer())
      f.fail("size", f.dump("size"), "must be {\"height\": pixels, \"width\": pixels}");
    c.height = v["height"].get<int>(), c.width = v["width"].get<int>();
    if (c.height < 1 || c.height > 8192 || c.width < 1 || c.width > 8192)
      f.fail("size", f.dump("size"), "must be between 1 and 8192 pixels each way");
  }
  c.rescale_factor = f.get<double>("rescale_factor", c.rescale_factor);
  read_mean_std(f, c.mean, c.std);
  return c;
}

ClipImageProcessorConfig parse_clip_image_processor_config(const std::string& text, const std::string& file) {
  Fields f(text, file);
  ClipImageProcessorConfig c;
  const auto& j = f.raw();
  // Only the steps every CLIP checkpoint runs are implemented: refuse a processor that skips one.
  for (const char* step : {"do_resize", "do_center_crop", "do_rescale", "do_normalize", "do_convert_rgb"})
    if (!f.get<bool>(step, true)) f.fail(step, "false", "is not supported: CLIP's processor resizes, crops, rescales and normalises");
  if (f.get<int>("resample", 3) != 3)
    f.fail("resample", f.dump("resample"), "is not supported; CLIP's processor resizes bicubic (3)");
  const auto size_field = [&](const char* key, const char* inner, int fallback) {
    if (!j.contains(key) || j[key].is_null()) return fallback;
    const auto& v = j[key];
    if (v.is_number_integer()) return v.get<int>();
    if (v.is_object() && v.contains(inner) && v[inner].is_number_integer()) return v[inner].get<int>();
    f.fail(key, f.dump(key), std::string("must be a number of pixels or {\"") + inner + "\": pixels}");
    return fallback;
  };
  c.shortest_edge = size_field("size", "shortest_edge", c.shortest_edge);
  c.crop_height = size_field("crop_size", "height", c.crop_height);
  c.crop_width = size_field("crop_size", "width", c.crop_width);
  for (int v : {c.shortest_edge, c.crop_height, c.crop_width})
    if (v < 1 || v > 8192) f.fail("size", std::to_string(v), "must be between 1 and 8192 pixels");
  c.rescale_factor = f.get<double>("rescale_factor", c.rescale_factor);
  read_mean_std(f, c.mean, c.std);
  return c;
}

}  // namespace studio::plan

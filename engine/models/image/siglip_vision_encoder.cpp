#include "models/image/siglip_vision_encoder.h"

#include <set>

#include <ATen/TensorOperators.h>
#include <ATen/ops/conv2d.h>
#include <c10/core/InferenceMode.h>

#include "io/weights/weights.h"
#include "plan/error.h"

namespace studio::models {

std::shared_ptr<SiglipVisionEncoder> SiglipVisionEncoder::load(const std::string& dir, const plan::ClipVisionConfig& cfg,
                                                               at::ScalarType dtype, at::Device device) {
  auto w = io::WeightSet::open(dir, "model");
  auto e = std::make_shared<SiglipVisionEncoder>();
  e->cfg_ = cfg;
  e->dtype_ = dtype;
  e->device_ = device;
  const int64_t h = cfg.hidden_size, p = cfg.patch_size;
  const std::string note = "from image_encoder/config.json's hidden_size / intermediate_size / patch_size / image_size";
  auto take = [&](const std::string& name, std::vector<int64_t> shape) { return w.take(name, shape, dtype, device, note); };
  e->patch_weight_ = take("vision_model.embeddings.patch_embedding.weight", {h, 3, p, p});
  e->patch_bias_ = take("vision_model.embeddings.patch_embedding.bias", {h});
  e->positions_ = take("vision_model.embeddings.position_embedding.weight", {cfg.tokens(), h});
  e->layers_ = text::ClipLayers::load(take, "vision_model.encoder.layers.", cfg.num_hidden_layers, h,
                                      cfg.intermediate_size, cfg.num_attention_heads, cfg.layer_norm_eps, cfg.hidden_act);
  e->post_norm_ = {take("vision_model.post_layernorm.weight", {h}), take("vision_model.post_layernorm.bias", {h})};
  // The pooling head (the "vision_use_head" of the config) is not what the pipeline reads.
  std::set<std::string> unused{"vision_model.embeddings.position_ids"};
  for (const auto& name : w.names())
    if (name.rfind("vision_model.head.", 0) == 0) unused.insert(name);
  w.expect_all_taken(unused);
  return e;
}

at::Tensor SiglipVisionEncoder::last_hidden_state(const at::Tensor& pixel_values) const {
  c10::InferenceMode guard;
  if (pixel_values.dim() != 4 || pixel_values.size(1) != 3 || pixel_values.size(2) != cfg_.image_size ||
      pixel_values.size(3) != cfg_.image_size)
    throw InputError("SigLIP image encoder: pixel values " + io::shape_str(pixel_values.sizes().vec()) +
                     "; expected [B, 3, " + std::to_string(cfg_.image_size) + ", " + std::to_string(cfg_.image_size) + "]");
  const auto patches = at::conv2d(pixel_values.to(device_, dtype_), patch_weight_, patch_bias_, cfg_.patch_size)
                           .flatten(2)
                           .transpose(1, 2);
  const auto x = layers_.run(patches + positions_, {}, layers_.layers.size());
  return layers_.norm(x, post_norm_).to(at::kFloat);
}

}  // namespace studio::models

#include "models/image/clip_vision_encoder.h"

#include <set>

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/conv2d.h>
#include <c10/core/InferenceMode.h>

#include "io/weights/weights.h"
#include "plan/error.h"

namespace studio::models {

std::shared_ptr<ClipVisionEncoder> ClipVisionEncoder::load(const std::string& dir, const plan::ClipVisionConfig& cfg,
                                                           at::ScalarType dtype, at::Device device) {
  auto w = io::WeightSet::open(dir, "model");
  auto e = std::make_shared<ClipVisionEncoder>();
  e->cfg_ = cfg;
  e->dtype_ = dtype;
  e->device_ = device;
  const int64_t h = cfg.hidden_size, p = cfg.patch_size;
  const std::string note = "from image_encoder/config.json's hidden_size / intermediate_size / patch_size / image_size";
  auto take = [&](const std::string& name, std::vector<int64_t> shape) { return w.take(name, shape, dtype, device, note); };
  e->class_embedding_ = take("vision_model.embeddings.class_embedding", {h});
  e->patch_weight_ = take("vision_model.embeddings.patch_embedding.weight", {h, 3, p, p});
  e->positions_ = take("vision_model.embeddings.position_embedding.weight", {cfg.tokens(), h});
  e->pre_norm_ = {take("vision_model.pre_layrnorm.weight", {h}), take("vision_model.pre_layrnorm.bias", {h})};
  // The last layer's output is not used (hidden_states[-2]): its weights are not read.
  e->layers_ = text::ClipLayers::load(take, "vision_model.encoder.layers.", cfg.num_hidden_layers - 1, h,
                                      cfg.intermediate_size, cfg.num_attention_heads, cfg.layer_norm_eps, cfg.hidden_act);
  std::set<std::string> unused{"vision_model.embeddings.position_ids"};
  for (const auto& name : w.names())
    if (name.rfind("vision_model.encoder.layers." + std::to_string(cfg.num_hidden_layers - 1) + ".", 0) == 0 ||
        name.rfind("vision_model.post_layernorm.", 0) == 0 || name.rfind("visual_projection.", 0) == 0)
      unused.insert(name);
  w.expect_all_taken(unused);
  return e;
}

at::Tensor ClipVisionEncoder::penultimate_hidden_states(const at::Tensor& pixel_values) const {
  c10::InferenceMode guard;
  const int64_t B = pixel_values.size(0), h = cfg_.hidden_size;
  if (pixel_values.dim() != 4 || pixel_values.size(1) != 3 || pixel_values.size(2) != cfg_.image_size ||
      pixel_values.size(3) != cfg_.image_size)
    throw InputError("CLIP image encoder: pixel values " + io::shape_str(pixel_values.sizes().vec()) + "; expected [B, 3, " +
                     std::to_string(cfg_.image_size) + ", " + std::to_string(cfg_.image_size) + "]");
  const auto patches =
      at::conv2d(pixel_values.to(device_, dtype_), patch_weight_, {}, cfg_.patch_size).flatten(2).transpose(1, 2);
  auto x = at::cat({class_embedding_.expand({B, 1, h}), patches}, 1) + positions_;
  x = layers_.norm(x, pre_norm_);
  return layers_.run(x, {}, layers_.layers.size()).to(at::kFloat);
}

}  // namespace studio::models

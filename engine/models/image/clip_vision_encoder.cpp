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
  auto weights = io::WeightSet::open(dir, "model");
  return load(weights, cfg, dtype, device);
}

std::shared_ptr<ClipVisionEncoder> ClipVisionEncoder::load(io::WeightSet& w, const plan::ClipVisionConfig& cfg,
                                                           at::ScalarType dtype, at::Device device) {
  auto e = std::make_shared<ClipVisionEncoder>();
  e->cfg_ = cfg;
  e->dtype_ = dtype;
  e->device_ = device;
  const int64_t h = cfg.hidden_size, p = cfg.patch_size;
  const std::string note = "from image_encoder/config.json's hidden_size / intermediate_size / patch_size / image_size";
  auto take = [&](const std::string& name, std::vector<int64_t> shape) { return w.take(name, shape, dtype, device, note); };
  const std::string v = "vision_model.";
  e->patch_weight_ = take(v + "embeddings.patch_embedding.weight", {h, 3, p, p});
  e->positions_ = take(v + "embeddings.position_embedding.weight", {cfg.tokens(), h});
  std::set<std::string> unused{v + "embeddings.position_ids"};
  if (cfg.class_token) {
    e->class_embedding_ = take(v + "embeddings.class_embedding", {h});
    e->pre_norm_ = {take(v + "pre_layrnorm.weight", {h}), take(v + "pre_layrnorm.bias", {h})};
  } else {
    e->patch_bias_ = take(v + "embeddings.patch_embedding.bias", {h});
  }
  // CLIP's last layer (hidden_states[-2] is read) and SigLIP's pooling head are never run: not read.
  const int layers = cfg.class_token ? cfg.num_hidden_layers - 1 : cfg.num_hidden_layers;
  e->layers_ = text::ClipLayers::load(take, v + "encoder.layers.", layers, h, cfg.intermediate_size,
                                      cfg.num_attention_heads, cfg.layer_norm_eps, cfg.hidden_act);
  if (!cfg.class_token) e->post_norm_ = {take(v + "post_layernorm.weight", {h}), take(v + "post_layernorm.bias", {h})};
  const std::string last = v + "encoder.layers." + std::to_string(cfg.num_hidden_layers - 1) + ".";
  for (const auto& name : w.names())
    if ((cfg.class_token && (name.rfind(last, 0) == 0 || name.rfind(v + "post_layernorm.", 0) == 0 ||
                             name.rfind("visual_projection.", 0) == 0)) ||
        (!cfg.class_token && name.rfind(v + "head.", 0) == 0))
      unused.insert(name);
  w.expect_all_taken(unused);
  return e;
}

at::Tensor ClipVisionEncoder::image_embeds(const at::Tensor& pixel_values) const {
  c10::InferenceMode guard;
  const int64_t B = pixel_values.size(0), h = cfg_.hidden_size;
  const char* tower = cfg_.class_token ? "CLIP" : "SigLIP";
  if (pixel_values.dim() != 4 || pixel_values.size(1) != 3 || pixel_values.size(2) != cfg_.image_size ||
      pixel_values.size(3) != cfg_.image_size)
    throw InputError(std::string(tower) + " image encoder: pixel values " + io::shape_str(pixel_values.sizes().vec()) +
                     "; expected [B, 3, " + std::to_string(cfg_.image_size) + ", " + std::to_string(cfg_.image_size) + "]");
  const auto patches = at::conv2d(pixel_values.to(device_, dtype_), patch_weight_, patch_bias_, cfg_.patch_size)
                           .flatten(2)
                           .transpose(1, 2);
  if (!cfg_.class_token)
    return layers_.norm(layers_.run(patches + positions_, {}, layers_.layers.size()), post_norm_).to(at::kFloat);
  auto x = at::cat({class_embedding_.expand({B, 1, h}), patches}, 1) + positions_;
  return layers_.run(layers_.norm(x, pre_norm_), {}, layers_.layers.size()).to(at::kFloat);
}

}  // namespace studio::models

#include "models/image/pixel_values.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/tensor.h>

#include "plan/error.h"

namespace studio::models {

namespace {

// [H, W, 3] bytes -> [1, 3, H, W] float64 values 0..255.
at::Tensor picture_values(const video::Picture& p) {
  return at::from_blob(const_cast<uint8_t*>(p.rgb.data()), {p.height, p.width, 3}, at::kByte)
      .permute({2, 0, 1})
      .unsqueeze(0)
      .to(at::kDouble);
}

}  // namespace

at::Tensor clip_pixel_values(const video::Picture& picture, const plan::ClipImageProcessorConfig& cfg) {
  // transformers' get_resize_output_image_size(default_to_square=False): the short edge to the size, the
  // long one int(size * long / short).
  const bool wide = picture.width > picture.height;
  const int shorter = wide ? picture.height : picture.width, longer = wide ? picture.width : picture.height;
  const int resized_long = int(double(cfg.shortest_edge) * longer / shorter);
  const int w = wide ? resized_long : cfg.shortest_edge, h = wide ? cfg.shortest_edge : resized_long;
  if (h < cfg.crop_height || w < cfg.crop_width)
    throw InputError("the picture is " + std::to_string(picture.width) + " x " + std::to_string(picture.height) +
                     ": resized to " + std::to_string(w) + " x " + std::to_string(h) + " it is smaller than CLIP's " +
                     std::to_string(cfg.crop_width) + " x " + std::to_string(cfg.crop_height) + " crop");
  const auto resized = video::resize(picture, w, h, video::Resample::Bicubic);
  const auto cropped = video::crop(resized, (w - cfg.crop_width) / 2, (h - cfg.crop_height) / 2, cfg.crop_width,
                                   cfg.crop_height);
  const auto scaled = (picture_values(cropped) * cfg.rescale_factor).to(at::kFloat);
  const auto mean = at::tensor(cfg.mean, at::kDouble).to(at::kFloat).view({1, 3, 1, 1});
  const auto std = at::tensor(cfg.std, at::kDouble).to(at::kFloat).view({1, 3, 1, 1});
  return (scaled - mean) / std;
}

at::Tensor vae_pixel_values(const video::Picture& picture, int width, int height) {
  const auto resized = picture.width == width && picture.height == height
                           ? picture
                           : video::resize(picture, width, height, video::Resample::Lanczos);
  return picture_values(resized).to(at::kFloat) / 255.0f * 2.0f - 1.0f;
}

}  // namespace studio::models

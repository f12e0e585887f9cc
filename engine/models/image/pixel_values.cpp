#include "models/image/pixel_values.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/tensor.h>

#include "plan/error.h"

namespace studio::models {

namespace {

// [H, W, 3] bytes -> [1, 3, H, W] float64 values 0..255, contiguous: a channels-last picture would send the
// encoders' CPU convolutions down another kernel than the one their reference cases check.
at::Tensor picture_values(const video::Picture& p) {
  return at::from_blob(const_cast<uint8_t*>(p.rgb.data()), {p.height, p.width, 3}, at::kByte)
      .permute({2, 0, 1})
      .unsqueeze(0)
      .to(at::kDouble)
      .contiguous();
}

// The processors' last steps: x rescale (in float64, then float32), (x - mean) / std.
at::Tensor normalized(const at::Tensor& values, double rescale, const std::vector<double>& mean,
                      const std::vector<double>& std_dev) {
  const auto scaled = (values * rescale).to(at::kFloat);
  const auto m = at::tensor(mean, at::kDouble).to(at::kFloat).view({1, 3, 1, 1});
  const auto s = at::tensor(std_dev, at::kDouble).to(at::kFloat).view({1, 3, 1, 1});
  return (scaled - m) / s;
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
  return normalized(picture_values(cropped), cfg.rescale_factor, cfg.mean, cfg.std);
}

at::Tensor vae_pixel_values(const video::Picture& picture, int width, int height) {
  const auto resized = picture.width == width && picture.height == height
                           ? picture
                           : video::resize(picture, width, height, video::Resample::Lanczos);
  return picture_values(resized).to(at::kFloat) / 255.0f * 2.0f - 1.0f;
}

at::Tensor siglip_pixel_values(const video::Picture& picture, const plan::SiglipImageProcessorConfig& cfg) {
  const auto resized = video::resize(picture, cfg.width, cfg.height, video::Resample::Bicubic);
  return normalized(picture_values(resized), cfg.rescale_factor, cfg.mean, cfg.std);
}

video::Picture cover_and_crop(const video::Picture& p, int width, int height) {
  // The side that already fits is the target's; the other follows the picture's aspect (int division).
  const bool fit_width = double(width) / height > double(p.width) / p.height;
  const int w = fit_width ? width : p.width * height / p.height;
  const int h = fit_width ? p.height * width / p.width : height;
  const auto resized = video::resize(p, w, h, video::Resample::Lanczos);
  // Pasted centred into the target: the window starts where the paste's negative offset says.
  return video::crop(resized, w / 2 - width / 2, h / 2 - height / 2, width, height);
}

}  // namespace studio::models

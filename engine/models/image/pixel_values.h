// A picture as the image-to-video pipelines' processors hand it to their encoders, to the last bit of their
// PIL resizes: diffusers' VideoProcessor for the VAE, transformers' CLIPImageProcessor and
// SiglipImageProcessor for the picture encoders.
#pragma once
#include <ATen/core/Tensor.h>

#include "plan/clip_config.h"
#include "video/picture.h"

namespace studio::models {

// CLIPImageProcessor on one picture: the shortest edge resized to `shortest_edge` (PIL bicubic), the center
// crop, x rescale_factor (in float64, then float32), (x - mean) / std: [1, 3, crop_height, crop_width].
at::Tensor clip_pixel_values(const video::Picture& picture, const plan::ClipImageProcessorConfig& cfg);

// diffusers' VideoProcessor.preprocess: PIL Lanczos to width x height (stretched, not cropped), / 255,
// 2x - 1: [1, 3, height, width] float32.
at::Tensor vae_pixel_values(const video::Picture& picture, int width, int height);

// SiglipImageProcessor on one picture: PIL bicubic to its height x width, x rescale_factor, (x - mean) / std:
// [1, 3, height, width] float32.
at::Tensor siglip_pixel_values(const video::Picture& picture, const plan::SiglipImageProcessorConfig& cfg);

// diffusers' resize_mode "crop" (VaeImageProcessor._resize_and_crop): the picture scaled with PIL Lanczos until it
// covers width x height (the other side by integer division), then its centre window of that size.
video::Picture cover_and_crop(const video::Picture& picture, int width, int height);

}  // namespace studio::models

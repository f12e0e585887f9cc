#include "models/hunyuan15/hunyuan15_pictures.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/zeros.h>

#include "models/hunyuan15/hunyuan15_vae.h"
#include "models/image/clip_vision_encoder.h"
#include "models/image/pixel_values.h"
#include "plan/families/hunyuan15_config.h"

namespace studio::models {

PictureConditioning hunyuan15_picture_conditioning(const plan::ModelFolder& folder, const plan::JobSpec& job,
                                                   at::ScalarType dtype, at::Device device, const text::Log& log,
                                                   const RowShare* rows) {
  const auto& parts = folder.parts_as<plan::Hunyuan15Parts>();
  const auto picture = video::read_picture(job.image_file, "--image");
  const auto crop = cover_and_crop(picture, job.width, job.height);
  log("the picture (" + std::to_string(picture.width) + " x " + std::to_string(picture.height) + ") covers " +
      std::to_string(job.width) + " x " + std::to_string(job.height) + " and is cropped to it");
  PictureConditioning out;
  out.record.emplace_back(
      "image_resized",
      at::from_blob(const_cast<uint8_t*>(crop.rgb.data()), {crop.height, crop.width, 3}, at::kByte).clone());

  const auto pixel_values = siglip_pixel_values(crop, *parts.image_processor);
  log("encoding the picture with the SigLIP image encoder (" + std::to_string(parts.image_encoder->num_hidden_layers) +
      " layers) on " + device.str());
  const auto siglip = ClipVisionEncoder::load(part_path(folder, "image_encoder"), *parts.image_encoder, dtype, device);
  out.image = siglip->image_embeds(pixel_values).cpu();
  out.record.emplace_back("siglip_pixel_values", pixel_values);
  out.record.emplace_back("image_embeds", out.image);

  const auto image = vae_pixel_values(crop, job.width, job.height);  // already the size: no resize
  log("encoding the picture with the VAE encoder on " + device.str() +
      (rows ? ", split by rows over " + std::to_string(rows->ranks) + " ranks"
            : job.vae_tiling ? ", in tiles (--enable_tiling)" : ""));
  auto weights = io::WeightSet::open(part_path(folder, "vae"), "diffusion_pytorch_model");
  const auto vae = Hunyuan15Vae::load(weights, *parts.vae, dtype, device, /*with_encoder=*/true);
  // As the pipeline encodes with the VAE's tiling on: the same tiles as the decode's (--tile_sample_min_*).
  const TileOptions tiles{job.tile_sample_min_height, job.tile_sample_min_width};
  const auto moments =
      (job.vae_tiling && !rows ? vae->encode_tiled(image.unsqueeze(2), tiles) : vae->encode(image.unsqueeze(2), rows))
          .cpu();
  const int64_t C = parts.vae->latent_channels;
  // The pipeline takes the distribution's mode (the mean), scaled as the latents are.
  const auto image_latents = moments.narrow(1, 0, C) * parts.vae->scaling_factor;  // [1, C, 1, h, w]
  const int64_t F = plan::latent_geometry(job, folder).frames;
  auto cond_latents = at::zeros({1, C, F, image_latents.size(3), image_latents.size(4)});
  cond_latents.narrow(2, 0, 1).copy_(image_latents);
  auto mask = at::zeros({1, 1, F, image_latents.size(3), image_latents.size(4)});
  mask.narrow(2, 0, 1).fill_(1);
  out.condition = at::cat({cond_latents, mask}, 1);
  out.record.emplace_back("image", image);
  out.record.emplace_back("vae_encoder_output", moments);
  out.record.emplace_back("image_latents", image_latents);
  out.record.emplace_back("cond_latents", cond_latents);
  out.record.emplace_back("cond_mask", mask);
  return out;
}

}  // namespace studio::models

#include "models/wan/wan_pictures.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>

#include "models/image/clip_vision_encoder.h"
#include "models/image/pixel_values.h"
#include "models/wan/wan_vae.h"
#include "plan/families/wan_config.h"
#include "plan/job.h"

namespace studio::models {

namespace {

// The mask [1, tc, F', h, w]: 1 on the video frames given (`frames`), each latent frame's tc video frames as its
// channels, the first video frame counted tc times (it alone makes latent frame 0).
at::Tensor frame_mask(int num_frames, bool last, int tc, int64_t h, int64_t w) {
  auto per_frame = at::zeros({1, 1, num_frames, h, w});
  per_frame.narrow(2, 0, 1).fill_(1);
  if (last) per_frame.narrow(2, num_frames - 1, 1).fill_(1);
  const auto first = per_frame.narrow(2, 0, 1).repeat({1, 1, tc, 1, 1});
  const auto all = at::cat({first, per_frame.narrow(2, 1, num_frames - 1)}, 2);
  return all.view({1, -1, tc, h, w}).transpose(1, 2).contiguous();
}

}  // namespace

PictureConditioning wan_picture_conditioning(const plan::ModelFolder& folder, const plan::JobSpec& job,
                                             at::ScalarType dtype, at::Device device, const text::Log& log,
                                             const RowShare* rows) {
  const auto& parts = folder.parts_as<plan::WanParts>();
  std::vector<video::Picture> pictures{video::read_picture(job.image_file, "--image")};
  if (!job.last_image_file.empty()) pictures.push_back(video::read_picture(job.last_image_file, "--last_image"));
  PictureConditioning out;
  if (parts.image_encoder) {
    std::vector<at::Tensor> pixels;
    for (const auto& p : pictures) pixels.push_back(clip_pixel_values(p, *parts.image_processor));
    const auto pixel_values = at::cat(pixels, 0);
    log("encoding the picture" + std::string(pictures.size() > 1 ? "s" : "") + " with the CLIP image encoder (" +
        std::to_string(parts.image_encoder->num_hidden_layers) + " layers) on " + device.str());
    const auto clip = ClipVisionEncoder::load(part_path(folder, "image_encoder"), *parts.image_encoder, dtype, device);
    const auto embeds = clip->image_embeds(pixel_values).cpu();
    out.record.emplace_back("clip_pixel_values", pixel_values);
    out.record.emplace_back("image_embeds", embeds);
    out.image = embeds.reshape({1, -1, embeds.size(2)});  // FLF2V: both pictures' tokens, one sequence
  }
  std::vector<at::Tensor> images;
  for (const auto& p : pictures) images.push_back(vae_pixel_values(p, job.width, job.height).unsqueeze(2));
  // TI2V encodes the picture alone (it becomes the first latent frame); the others a video of it and black
  // frames (and the last picture).
  const bool first_frame_only = parts.transformer.expand_timesteps;
  const int F = first_frame_only ? 1 : job.num_frames;
  const int64_t between = F - int64_t(pictures.size());
  auto video = first_frame_only ? images[0] : at::cat({images[0], at::zeros({1, 3, between, job.height, job.width})}, 2);
  if (pictures.size() > 1) video = at::cat({video, images[1]}, 2);
  out.record.emplace_back("image", images[0].squeeze(2));
  log("encoding " + (first_frame_only ? std::string("the picture") : "the conditioning video (" + std::to_string(F) +
                                                                          " frames)") +
      " with the VAE encoder on " + device.str() +
      (rows ? ", split by rows over " + std::to_string(rows->ranks) + " ranks"
            : job.vae_tiling ? ", in tiles (--enable_tiling)" : ""));
  const auto vae = WanVae::load(part_path(folder, "vae"), *parts.vae, dtype, device, /*with_encoder=*/true);
  // As the pipeline encodes with the VAE's tiling on: the same tiles as the decode's (--tile_sample_min_*).
  const auto moments = (job.vae_tiling && !rows
                            ? vae->encode_tiled(video, {job.tile_sample_min_height, job.tile_sample_min_width})
                            : vae->encode(video, rows))
                           .cpu();
  const int64_t z = parts.vae->z_dim;
  const auto latent_condition = vae->normalize(moments.narrow(1, 0, z));  // the mean: the pipeline takes the mode
  out.record.emplace_back("vae_encoder_output", moments);
  out.record.emplace_back("latent_condition", latent_condition);
  if (first_frame_only) {
    out.condition = latent_condition;
    out.record.emplace_back("condition", out.condition);
    return out;
  }
  const auto mask = frame_mask(F, pictures.size() > 1, parts.vae->temporal_compression(), latent_condition.size(3),
                               latent_condition.size(4));
  out.condition = at::cat({mask, latent_condition}, 1);
  out.record.emplace_back("mask", mask);
  out.record.emplace_back("condition", out.condition);
  return out;
}

}  // namespace studio::models

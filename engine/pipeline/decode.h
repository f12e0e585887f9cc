// Final latents -> video frames, as the reference pipeline decodes them: the family's preparation (CogVideoX
// 1.5's padding frames dropped, the scaling factor undone), then the VAE batch by batch.
#pragma once
#include <functional>

#include <ATen/core/Tensor.h>

#include "models/vae_decoder.h"
#include "parallel/comm.h"

namespace studio::models {
struct LatentRgb;
}  // namespace studio::models

namespace studio::pipeline {

struct DecodeOptions {
  bool tiling = false;   // overlapping tiles
  models::TileOptions tiles;
  bool slicing = false;  // the videos one at a time
  parallel::Group* rows = nullptr;  // split by rows over this group (parallel VAE); frames reach its rank 0
  // How far the decode of all the videos has got, in parts (tiles, frame batches, levels; models/vae_decoder.h).
  models::DecodeProgress progress;
};

// Decoded frames [b, 3, T, H, W] of videos first_video .. first_video + b - 1, from frame first_frame.
using FramesFn = std::function<void(const at::Tensor& frames, int first_video, int first_frame)>;

// latents [B, F, C, h, w] -> video float32 in about [-1, 1], handed to `on_frames` as it is decoded: one
// batch of frames at a time (a whole video at once when tiled).
void decode_latents(const models::VaeDecoder& vae, const at::Tensor& latents, int pad_frames,
                    const FramesFn& on_frames, const DecodeOptions& options = {});

// [B, 3, T, H, W] in [-1, 1] -> [B, T, H, W, 3] uint8, as the reference's video processor maps it:
// (x / 2 + 0.5) clamped to [0, 1], times 255, rounded.
at::Tensor to_rgb8(const at::Tensor& video);

// A cheap look at latents [B, F, C, h, w] ([B, C, F, h, w] where the geometry is `channels_first`, or an image's
// [B, C, h, w]) while denoising, as RGB8 [h, w, 3] on the CPU: the middle latent frame of the first video (or
// the first image) through the family's factors (models::latent_rgb), whose colours approximate the picture;
// without factors, channels 0-2 each stretched over mean +- 2 standard deviations, which shows where structure
// forms but not its colours.
at::Tensor latent_preview(const at::Tensor& latents, const models::LatentRgb& rgb, bool channels_first);

}  // namespace studio::pipeline

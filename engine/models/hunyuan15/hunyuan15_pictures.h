// HunyuanVideo15ImageToVideoPipeline's preparation of its picture (diffusers 0.42.1): resized to cover the
// video's size and centre-cropped (the size itself the picture's aspect-ratio bucket: plan::size_from_picture);
// SigLIP's rows from that crop (the transformer's first text rows); and the condition channels: the crop's VAE
// mean times the scaling factor in latent frame 0 (zeros after), then a mask of ones on frame 0. With `rows`
// (parallel VAE) each rank encodes its share of the crop's rows.
#pragma once
#include "models/family_runtime.h"

namespace studio::models {

PictureConditioning hunyuan15_picture_conditioning(const plan::ModelFolder& folder, const plan::JobSpec& job,
                                                   at::ScalarType dtype, at::Device device, const text::Log& log,
                                                   const RowShare* rows = nullptr);

}  // namespace studio::models

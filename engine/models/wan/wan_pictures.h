// WanImageToVideoPipeline's preparation of the pictures (diffusers 0.35.2): the CLIP image tokens (Wan2.1
// I2V, from the raw pictures), and the condition: a mask of the frames given (the first; the last too with
// --last_image) as temporal_compression() channels per latent frame, then the VAE's mean of the video made
// of those frames and zeros, normalised.
#pragma once
#include "models/family_runtime.h"

namespace studio::models {

PictureConditioning wan_picture_conditioning(const plan::ModelFolder& folder, const plan::JobSpec& job,
                                             at::ScalarType dtype, at::Device device, const text::Log& log,
                                             const RowShare* rows = nullptr);

}  // namespace studio::models

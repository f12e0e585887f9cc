// Image-to-video's condition (models::StepInputs::condition) joined to the latents, for every family that
// takes its picture as input channels.
#pragma once
#include <ATen/core/Tensor.h>

#include "models/dit_model.h"

namespace studio::models {

// The latents with the condition's channels after theirs along `dim`, for a model whose input has `channels`
// condition channels (0: the latents alone). InputError when the call's condition does not fit the model.
at::Tensor join_condition(const StepInputs& in, int64_t channels, int64_t dim);

// Wan2.2 TI2V's condition: the picture's latent frame [B, C, 1, h, w] in place of the first frame of the
// latents [B, C, F, h, w] (diffusers' (1 - mask) * condition + mask * latents, to the bit). InputError when
// the shapes do not fit.
at::Tensor replace_first_frame(const at::Tensor& latents, const at::Tensor& condition);

}  // namespace studio::models

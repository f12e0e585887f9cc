// The one place a model folder's family picks the classes that run it (transformer, VAE, sampler): everything else loads a model
// through here and sees only the family seam (models/dit_model.h).
#pragma once
#include <memory>

#include <ATen/core/Tensor.h>

#include "models/dit_model.h"
#include "models/vae_decoder.h"
#include "plan/model_folder.h"
#include "sampling/sampler.h"

namespace studio::models {

// transformer/ of `folder`, every weight checked against its config, in `dtype` on `device`.
std::shared_ptr<DitModel> load_transformer(const plan::ModelFolder& folder, at::ScalarType dtype, at::Device device);
// vae/ of `folder` (which must have one), likewise.
std::shared_ptr<VaeDecoder> load_vae(const plan::ModelFolder& folder, at::ScalarType dtype, at::Device device);

// The folder's sampler for `steps` steps over latents of `image_tokens` tokens per sample.
std::unique_ptr<sampling::Sampler> make_sampler(const plan::ModelFolder& folder, int steps, int64_t image_tokens);

}  // namespace studio::models

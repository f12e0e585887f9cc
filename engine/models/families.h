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

// transformer/ of `folder` (expert 1: Wan2.2's transformer_2/), every weight checked against its config, in
// `dtype` on `device`: the blocks in `range` (a PipeFusion stage's), or all.
std::shared_ptr<DitModel> load_transformer(const plan::ModelFolder& folder, at::ScalarType dtype, at::Device device,
                                           BlockRange range = {}, int expert = 0);
// vae/ of `folder` (which must have one), likewise.
std::shared_ptr<VaeDecoder> load_vae(const plan::ModelFolder& folder, at::ScalarType dtype, at::Device device);

// The folder's sampler for `steps` steps over latents of `image_tokens` tokens per sample.
std::unique_ptr<sampling::Sampler> make_sampler(const plan::ModelFolder& folder, int steps, int64_t image_tokens);

// Latents as files hold them (--latents, --save_tensors, --keep_partial), as the reference pipeline keeps
// them: FLUX's packed 2x2 [B, N, 4C], a video family's as the model takes them.
at::Tensor latents_to_file(const plan::ModelFolder& folder, const at::Tensor& latents);
at::Tensor latents_from_file(const plan::ModelFolder& folder, const at::Tensor& stored, int64_t height, int64_t width);

// How a family's latents map to an approximate picture while denoising: rgb = latents . factors + bias,
// about [-1, 1] (the factors ComfyUI publishes for the family's latent space). Undefined where none are
// published (CogVideoX): the preview then shows the latents' own first channels.
struct LatentRgb {
  at::Tensor factors;  // [C, 3] float32
  at::Tensor bias;     // [3]
  bool channels_first = false;  // a video's latents are [B, C, F, h, w] (Wan), not [B, F, C, h, w]
};
LatentRgb latent_rgb(const plan::ModelFolder& folder);

}  // namespace studio::models

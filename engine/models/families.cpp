#include "models/families.h"

#include <filesystem>

#include <ATen/ops/from_blob.h>

#include "models/cogvideox_transformer.h"
#include "models/autoencoder_kl.h"
#include "models/cogvideox_vae.h"
#include "models/flux_transformer.h"
#include "sampling/flow_match.h"
#include "sampling/scheduler.h"

namespace studio::models {

namespace {

std::string part(const plan::ModelFolder& folder, const char* name) {
  return (std::filesystem::path(folder.dir) / name).string();
}

}  // namespace

std::shared_ptr<DitModel> load_transformer(const plan::ModelFolder& folder, at::ScalarType dtype, at::Device device,
                                           BlockRange range) {
  if (folder.flux)
    return FluxTransformer::load(part(folder, "transformer"), folder.flux->transformer, dtype, device, range);
  return CogVideoXTransformer::load(part(folder, "transformer"), folder.transformer, dtype, device, range);
}

std::shared_ptr<VaeDecoder> load_vae(const plan::ModelFolder& folder, at::ScalarType dtype, at::Device device) {
  if (folder.flux) return AutoencoderKL::load(part(folder, "vae"), *folder.flux->vae, dtype, device);
  return CogVideoXVae::load(part(folder, "vae"), *folder.vae, dtype, device);
}

std::unique_ptr<sampling::Sampler> make_sampler(const plan::ModelFolder& folder, int steps, int64_t image_tokens) {
  if (folder.flux) return std::make_unique<sampling::FlowMatchEuler>(folder.flux->scheduler, steps, image_tokens);
  return std::make_unique<sampling::Scheduler>(folder.scheduler, steps);
}

at::Tensor latents_to_file(const plan::ModelFolder& folder, const at::Tensor& latents) {
  return folder.flux ? pack_latents(latents) : latents;
}

at::Tensor latents_from_file(const plan::ModelFolder& folder, const at::Tensor& stored, int64_t height, int64_t width) {
  return folder.flux ? unpack_latents(stored, height, width) : stored;
}

LatentRgb latent_rgb(const plan::ModelFolder& folder) {
  if (!folder.flux || folder.flux->transformer.in_channels != 64) return {};
  // FLUX.1's 16 latent channels (ComfyUI's latent_formats.Flux, fitted for the denoiser's latent space).
  static const float flux[16][3] = {
      {-0.0346f, 0.0244f, 0.0681f},  {0.0034f, 0.0210f, 0.0687f},   {0.0275f, -0.0668f, -0.0433f},
      {-0.0174f, 0.0160f, 0.0617f},  {0.0859f, 0.0721f, 0.0329f},   {0.0004f, 0.0383f, 0.0115f},
      {0.0405f, 0.0861f, 0.0915f},   {-0.0236f, -0.0185f, -0.0259f}, {-0.0245f, 0.0250f, 0.1180f},
      {0.1008f, 0.0755f, -0.0421f},  {-0.0515f, 0.0201f, 0.0011f},  {0.0428f, -0.0012f, -0.0036f},
      {0.0817f, 0.0765f, 0.0749f},   {-0.1264f, -0.0522f, -0.1103f}, {-0.0280f, -0.0881f, -0.0499f},
      {-0.1262f, -0.0982f, -0.0778f}};
  static const float flux_bias[3] = {-0.0329f, -0.0718f, -0.0851f};
  return {at::from_blob(const_cast<float*>(&flux[0][0]), {16, 3}, at::kFloat).clone(),
          at::from_blob(const_cast<float*>(flux_bias), {3}, at::kFloat).clone()};
}

}  // namespace studio::models

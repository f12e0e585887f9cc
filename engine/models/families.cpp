#include "models/families.h"

#include <filesystem>

#include <ATen/ops/from_blob.h>

#include "models/cogvideox_transformer.h"
#include "models/autoencoder_kl.h"
#include "models/cogvideox_vae.h"
#include "models/flux_transformer.h"
#include "models/wan_transformer.h"
#include "models/wan_vae.h"
#include "sampling/flow_match.h"
#include "sampling/scheduler.h"
#include "sampling/unipc.h"

namespace studio::models {

namespace {

std::string part(const plan::ModelFolder& folder, const char* name) {
  return (std::filesystem::path(folder.dir) / name).string();
}

}  // namespace

std::shared_ptr<DitModel> load_transformer(const plan::ModelFolder& folder, at::ScalarType dtype, at::Device device,
                                           BlockRange range, int expert) {
  if (folder.wan && expert == 1)
    return WanTransformer::load(part(folder, "transformer_2"), *folder.wan->transformer_2, dtype, device, range);
  if (folder.wan) return WanTransformer::load(part(folder, "transformer"), folder.wan->transformer, dtype, device, range);
  if (folder.flux)
    return FluxTransformer::load(part(folder, "transformer"), folder.flux->transformer, dtype, device, range);
  return CogVideoXTransformer::load(part(folder, "transformer"), folder.transformer, dtype, device, range);
}

std::shared_ptr<VaeDecoder> load_vae(const plan::ModelFolder& folder, at::ScalarType dtype, at::Device device) {
  if (folder.flux) return AutoencoderKL::load(part(folder, "vae"), *folder.flux->vae, dtype, device);
  if (folder.wan) return WanVae::load(part(folder, "vae"), *folder.wan->vae, dtype, device);
  return CogVideoXVae::load(part(folder, "vae"), *folder.vae, dtype, device);
}

std::unique_ptr<sampling::Sampler> make_sampler(const plan::ModelFolder& folder, int steps, int64_t image_tokens) {
  if (folder.flux) return std::make_unique<sampling::FlowMatchEuler>(folder.flux->scheduler, steps, image_tokens);
  if (folder.wan) return std::make_unique<sampling::UniPC>(folder.wan->scheduler, steps);
  return std::make_unique<sampling::Scheduler>(folder.scheduler, steps);
}

at::Tensor latents_to_file(const plan::ModelFolder& folder, const at::Tensor& latents) {
  return folder.flux ? pack_latents(latents) : latents;
}

at::Tensor latents_from_file(const plan::ModelFolder& folder, const at::Tensor& stored, int64_t height, int64_t width) {
  return folder.flux ? unpack_latents(stored, height, width) : stored;
}

LatentRgb latent_rgb(const plan::ModelFolder& folder) {
  if (folder.wan && folder.wan->transformer.in_channels == 16) {
    // Wan2.1's 16 latent channels (ComfyUI's latent_formats.Wan21; Wan2.2 A14B shares its VAE).
    static const float wan[16][3] = {
        {-0.1299f, -0.1692f, 0.2932f}, {0.0671f, 0.0406f, 0.0442f},   {0.3568f, 0.2548f, 0.1747f},
        {0.0372f, 0.2344f, 0.1420f},   {0.0313f, 0.0189f, -0.0328f},  {0.0296f, -0.0956f, -0.0665f},
        {-0.3477f, -0.4059f, -0.2925f}, {0.0166f, 0.1902f, 0.1975f},  {-0.0412f, 0.0267f, -0.1364f},
        {-0.1293f, 0.0740f, 0.1636f},  {0.0680f, 0.3019f, 0.1128f},   {0.0032f, 0.0581f, 0.0639f},
        {-0.1251f, 0.0927f, 0.1699f},  {0.0060f, -0.0633f, 0.0005f},  {0.3477f, 0.2275f, 0.2950f},
        {0.1984f, 0.0913f, 0.1861f}};
    static const float wan_bias[3] = {-0.1835f, -0.0868f, -0.3360f};
    return {at::from_blob(const_cast<float*>(&wan[0][0]), {16, 3}, at::kFloat).clone(),
            at::from_blob(const_cast<float*>(wan_bias), {3}, at::kFloat).clone(), true};
  }
  if (folder.wan) return {at::Tensor(), at::Tensor(), true};
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

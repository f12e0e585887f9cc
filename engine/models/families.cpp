#include "models/families.h"

#include <filesystem>

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

}  // namespace studio::models

#include "models/families.h"

#include <filesystem>

#include "models/cogvideox_transformer.h"
#include "models/cogvideox_vae.h"
#include "sampling/scheduler.h"

namespace studio::models {

std::shared_ptr<DitModel> load_transformer(const plan::ModelFolder& folder, at::ScalarType dtype, at::Device device) {
  const std::string dir = (std::filesystem::path(folder.dir) / "transformer").string();
  return CogVideoXTransformer::load(dir, folder.transformer, dtype, device);
}

std::shared_ptr<VaeDecoder> load_vae(const plan::ModelFolder& folder, at::ScalarType dtype, at::Device device) {
  return CogVideoXVae::load((std::filesystem::path(folder.dir) / "vae").string(), *folder.vae, dtype, device);
}

std::unique_ptr<sampling::Sampler> make_sampler(const plan::ModelFolder& folder, int steps, int64_t) {
  return std::make_unique<sampling::Scheduler>(folder.scheduler, steps);
}

}  // namespace studio::models

#include "models/family_runtime.h"

#include <stdexcept>

#include "io/weights/lora.h"

namespace studio::models {

// Each family's runtime, defined in models/<family>/<family>_runtime.cpp.
const FamilyRuntime& cogvideox_runtime();
const FamilyRuntime& flux_runtime();
const FamilyRuntime& wan_runtime();
const FamilyRuntime& hunyuan15_runtime();

const std::vector<const FamilyRuntime*>& runtimes() {
  static const std::vector<const FamilyRuntime*> all = {&cogvideox_runtime(), &flux_runtime(), &wan_runtime(),
                                                              &hunyuan15_runtime()};
  return all;
}

const FamilyRuntime& runtime_of(const plan::ModelFolder& folder) {
  const plan::Family& family = plan::rules_of(folder);
  for (const FamilyRuntime* r : runtimes())
    if (&r->family() == &family) return *r;
  throw std::logic_error(std::string(family.name()) + " has no runtime in models/ (docs/adding-a-family.md)");
}

std::shared_ptr<DitModel> load_transformer(const plan::ModelFolder& folder, at::ScalarType dtype, at::Device device,
                                           BlockRange range, int expert, std::shared_ptr<BlockWeights> block_weights) {
  return runtime_of(folder).load_transformer(folder, dtype, device, range, expert, std::move(block_weights));
}

io::WeightSet transformer_weights(const plan::ModelFolder& folder, int expert) {
  const std::string part = expert == 1 ? "transformer_2" : "transformer";
  const auto& family = plan::rules_of(folder);
  auto file = folder.weight_files.find(part);
  auto weights = file == folder.weight_files.end()
                     ? io::WeightSet::open(plan::part_path(folder, part), "diffusion_pytorch_model")
                     : io::WeightSet::open_part_file(part, file->second, {family.gguf_architecture()},
                                                [&](const std::set<std::string>& names) {
                                                  return family.transformer_renames(folder, names);
                                                });
  weights.store_linear_as(folder.quantize);
  weights.gemm_in_fp8(folder.fp8_gemm);
  weights.keep_deltas_beside(folder.loras_beside);
  if (const auto& loras = expert == 1 ? folder.loras_2 : folder.loras; !loras.empty())
    weights.add_deltas(io::lora_deltas(folder, loras, weights.names()));
  return weights;
}

std::shared_ptr<VaeDecoder> load_vae(const plan::ModelFolder& folder, at::ScalarType dtype, at::Device device) {
  return runtime_of(folder).load_vae(folder, dtype, device);
}

std::unique_ptr<sampling::Sampler> make_sampler(const plan::ModelFolder& folder, int steps, int64_t image_tokens) {
  return runtime_of(folder).make_sampler(folder, steps, image_tokens);
}

text::PromptEmbeds encode_prompts(const plan::ModelFolder& folder, const plan::JobSpec& job, at::ScalarType dtype,
                                  at::Device device, const text::Log& log) {
  text::require_text_parts(folder);
  return runtime_of(folder).encode_prompts(folder, job, dtype, device, log);
}

at::Tensor latents_to_file(const plan::ModelFolder& folder, const at::Tensor& latents) {
  return runtime_of(folder).latents_to_file(latents);
}

at::Tensor latents_from_file(const plan::ModelFolder& folder, const at::Tensor& stored, int64_t height, int64_t width) {
  return runtime_of(folder).latents_from_file(stored, height, width);
}

LatentRgb latent_rgb(const plan::ModelFolder& folder) { return runtime_of(folder).latent_rgb(folder); }

PictureConditioning FamilyRuntime::condition_on_pictures(const plan::ModelFolder& folder, const plan::JobSpec&,
                                                         at::ScalarType, at::Device, sampling::SeededNoise&,
                                                         const text::Log&, const RowShare*) const {
  throw std::logic_error("internal error: " + folder.variant.name + " takes no picture, and the plan let one through");
}

PictureConditioning condition_on_pictures(const plan::ModelFolder& folder, const plan::JobSpec& job,
                                          at::ScalarType dtype, at::Device device, sampling::SeededNoise& noise,
                                          const text::Log& log, const RowShare* rows) {
  return runtime_of(folder).condition_on_pictures(folder, job, dtype, device, noise, log, rows);
}

}  // namespace studio::models

#include "pipeline/reproduction.h"

#include "io/safetensors/safetensors_file.h"
#include "io/weights/tensor_file.h"
#include "models/family_runtime.h"
#include "plan/error.h"
#include "plan/output_format.h"

namespace studio::pipeline {

at::Tensor initial_latents(const plan::JobSpec& job, const plan::ModelFolder& model, const parallel::SampleSlice& slice,
                           sampling::SeededNoise& seeded) {
  const auto geo = plan::latent_geometry(job, model);
  const auto shape = geo.shape(job.num_videos_per_prompt);
  if (job.latents_file.empty()) {
    std::vector<int64_t> mine = shape;
    mine[0] = slice.count;
    return seeded.draw(mine);
  }
  // An image's latents travel packed 2x2, as FluxPipeline keeps them.
  const std::vector<int64_t> want =
      geo.has_frames ? shape : std::vector<int64_t>{shape[0], geo.latent_tokens, 4 * geo.channels};
  const char* layout = geo.channels_first ? "[B, C, F, H, W]" : geo.has_frames ? "[B, F, C, H, W]" : "[B, N, 4C] (packed)";
  auto all = io::TensorFile(job.latents_file, "--latents").get("latents_init", int64_t(want.size()), layout);
  if (all.sizes().vec() != want)
    throw InputError("--latents " + job.latents_file + ": latents_init has shape " + io::shape_str(all.sizes().vec()) +
                     " but --height " + std::to_string(job.height) + " --width " + std::to_string(job.width) +
                     (geo.has_frames ? " --num_frames " + std::to_string(job.num_frames) : std::string()) + " need " +
                     io::shape_str(want));
  return slice.of(models::latents_from_file(model, all, geo.height, geo.width));
}

std::unique_ptr<sampling::NoiseSource> recorded_noise(const plan::JobSpec& job, const parallel::SampleSlice& slice) {
  if (job.sampler_noise_file.empty()) return nullptr;
  io::TensorFile file(job.sampler_noise_file, "--sampler_noise");
  return std::make_unique<sampling::RecordedNoise>(slice.of(file.get("scheduler_noise", 6, "[steps, B, F, C, H, W]"), 1));
}

std::string keep_partial_latents(const plan::JobSpec& job, const plan::ModelFolder& model, Metadata meta,
                                 const PartialLatents& partial) {
  if (!partial.latents.defined()) return "";
  const std::string base = !job.save_tensors_file.empty() ? job.save_tensors_file : job.output_file;
  if (base.empty()) return "";
  const std::string path = plan::without_trailing_slash(base) + ".partial.safetensors";
  meta["cancelled_after_step"] = std::to_string(partial.step) + "/" + std::to_string(partial.total);
  io::save_tensors(path, {{"partial_latents", models::latents_to_file(model, partial.latents).cpu().contiguous()}}, meta);
  return "kept the latents of step " + meta["cancelled_after_step"] + " in " + path;
}

}  // namespace studio::pipeline

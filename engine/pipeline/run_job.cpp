#include "pipeline/run_job.h"

#include <chrono>
#include <filesystem>

#include <ATen/Context.h>

#include "io/tensor_file.h"
#include "plan/error.h"

namespace studio::pipeline {

namespace {

at::Device pick_device(const std::string& name) {
  if (name == "auto") return at::hasCUDA() ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
  if (name == "cpu") return at::kCPU;
  if (name.rfind("cuda", 0) == 0) {
    if (!at::hasCUDA())
      throw InputError("--device " + name + ": this build or machine has no CUDA device; use --device cpu");
    return at::Device(name);
  }
  throw InputError("--device '" + name + "': expected auto, cpu, cuda or cuda:N");
}

at::ScalarType pick_dtype(const std::string& name, const at::Device& dev) {
  if (name == "auto") return dev.is_cuda() ? at::kBFloat16 : at::kFloat;
  if (name == "float32") return at::kFloat;
  if (name == "bfloat16") return at::kBFloat16;
  if (name == "float16") return at::kHalf;
  throw InputError("--dtype '" + name + "': expected auto, float32, bfloat16 or float16");
}

std::string shape(const std::vector<int64_t>& s) { return io::shape_str(s); }

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

JobResult run_job(const plan::JobSpec& job, const plan::ModelFolder& model, const Hooks& hooks,
                  const std::function<void(const std::string&)>& log) {
  JobResult r;
  auto t0 = std::chrono::steady_clock::now();
  const at::Device device = pick_device(job.device);
  const at::ScalarType dtype = pick_dtype(job.dtype, device);
  const auto geo = plan::latent_geometry(job, model);

  if (job.prompt_embeds_file.empty())
    throw InputError("--prompt_embeds FILE is required: this build does not encode text yet (give a safetensors file "
                     "with prompt_embeds and negative_prompt_embeds [B, T, D])");
  DenoiseInputs in;
  io::TensorFile embeds(job.prompt_embeds_file, "--prompt_embeds");
  in.prompt_embeds = embeds.get("prompt_embeds", 3, "[B, T, D]");
  const bool cfg = job.guidance_scale > 1;
  if (cfg) in.negative_prompt_embeds = embeds.get("negative_prompt_embeds", 3, "[B, T, D]");
  in.num_inference_steps = job.num_inference_steps;
  in.guidance_scale = job.guidance_scale;
  in.use_dynamic_cfg = job.use_dynamic_cfg;
  const int64_t batch = in.prompt_embeds.size(0);
  const std::vector<int64_t> latent_shape{batch, geo.padded_frames, geo.channels, geo.height, geo.width};

  sampling::SeededNoise seeded(job.seed);
  if (!job.latents_file.empty()) {
    in.latents = io::TensorFile(job.latents_file, "--latents").get("latents_init", 5, "[B, F, C, H, W]");
    if (in.latents.sizes().vec() != latent_shape)
      throw InputError("--latents " + job.latents_file + ": latents_init has shape " + shape(in.latents.sizes().vec()) +
                       " but --height " + std::to_string(job.height) + " --width " + std::to_string(job.width) +
                       " --num_frames " + std::to_string(job.num_frames) + " need " + shape(latent_shape));
  } else {
    in.latents = seeded.draw(latent_shape);
  }
  std::unique_ptr<sampling::RecordedNoise> recorded;
  if (!job.sampler_noise_file.empty())
    recorded = std::make_unique<sampling::RecordedNoise>(
        io::TensorFile(job.sampler_noise_file, "--sampler_noise").get("scheduler_noise", 6, "[steps, B, F, C, H, W]"));

  log("loading " + (std::filesystem::path(model.dir) / "transformer").string() + " (" +
      plan::family_name(model.transformer.family()) + ") as " + std::string(c10::toString(dtype)) + " on " +
      device.str());
  auto transformer = models::CogVideoXTransformer::load((std::filesystem::path(model.dir) / "transformer").string(),
                                                        model.transformer, dtype, device);
  r.seconds_loading = since(t0);
  log("denoising " + shape(latent_shape) + " latents (" + std::to_string(geo.video_tokens) + " video + " +
      std::to_string(in.prompt_embeds.size(1)) + " text tokens), " + std::to_string(job.num_inference_steps) +
      " steps of " + plan::sampler_name(model.scheduler.kind));
  auto t1 = std::chrono::steady_clock::now();
  sampling::NoiseSource* noise = recorded ? static_cast<sampling::NoiseSource*>(recorded.get()) : &seeded;
  r.final_latents = denoise(*transformer, model.scheduler, in, noise, hooks).cpu();
  r.seconds_denoising = since(t1);
  return r;
}

}  // namespace studio::pipeline

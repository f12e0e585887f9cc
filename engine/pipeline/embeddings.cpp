#include "pipeline/embeddings.h"

#include <ATen/ops/empty.h>

#include "io/weights/tensor_file.h"
#include "models/family_runtime.h"
#include "parallel/job_ranks.h"
#include "plan/error.h"
#include "plan/family.h"

namespace studio::pipeline {

namespace {

Embeddings from_words(const plan::JobSpec& job, const plan::ModelFolder& model, parallel::Mesh& mesh,
                      at::ScalarType dtype, const at::Device& device,
                      const std::function<void(const std::string&)>& log) {
  const auto& rules = plan::rules_of(model);
  const int64_t L = job.max_sequence_length, D = model.text_encoder->d_model;
  // Shared on the rank's device (NCCL takes no host tensor), in float32 on every rank alike.
  const auto opts = at::TensorOptions(at::kFloat).device(device);
  Embeddings e;
  e.prompt = at::empty({1, L, D}, opts);
  if (rules.classifier_free()) e.negative = at::empty({1, L, D}, opts);
  if (const int pooled = rules.pooled_text_width(model); pooled > 0) e.pooled = at::empty({1, int64_t(pooled)}, opts);
  if (parallel::encodes(mesh)) {
    const bool on_cpu = job.text_encoder_device == "cpu";  // float32 there: CPUs are slow in half precision
    auto words = models::encode_prompts(model, job, on_cpu ? at::kFloat : dtype, on_cpu ? at::Device(at::kCPU) : device, log);
    e.prompt = words.prompt_embeds.to(opts).contiguous();
    if (e.negative.defined()) e.negative = words.negative_prompt_embeds.to(opts).contiguous();
    if (e.pooled.defined()) e.pooled = words.pooled_prompt_embeds.to(opts).contiguous();
    e.record = words.input_ids;
  }
  for (auto [name, t] : {std::pair{"pooled_prompt_embeds", &e.pooled}, std::pair{"negative_prompt_embeds", &e.negative},
                         std::pair{"prompt_embeds", &e.prompt}}) {
    if (!t->defined()) continue;
    parallel::share_encoded(mesh, *t);
    e.record.insert(e.record.begin(), {name, *t});
  }
  return e;
}

Embeddings from_file(const plan::JobSpec& job, const plan::ModelFolder& model) {
  const auto& rules = plan::rules_of(model);
  io::TensorFile file(job.prompt_embeds_file, "--prompt_embeds");
  Embeddings e;
  e.prompt = file.get("prompt_embeds", 3, "[B, T, D]");
  if (rules.classifier_free() && job.guidance_scale > 1)
    e.negative = file.get("negative_prompt_embeds", 3, "[B, T, D]");
  if (rules.pooled_text_width(model) > 0) e.pooled = file.get("pooled_prompt_embeds", 2, "[B, P]");
  return e;
}

}  // namespace

Embeddings prompt_embeddings(const plan::JobSpec& job, const plan::ModelFolder& model, parallel::Mesh& mesh,
                             at::ScalarType dtype, const at::Device& device,
                             const std::function<void(const std::string&)>& log) {
  Embeddings e = job.prompt.empty() ? from_file(job, model) : from_words(job, model, mesh, dtype, device, log);
  const int64_t samples = job.num_videos_per_prompt;
  for (at::Tensor* t : {&e.prompt, &e.negative, &e.pooled}) {
    if (!t->defined() || t->size(0) == samples) continue;
    if (t->size(0) != 1)
      throw InputError("--prompt_embeds holds " + std::to_string(t->size(0)) + " prompts but the job makes " +
                       std::to_string(samples) + " videos (--num_videos_per_prompt); give 1 or " +
                       std::to_string(samples) + " rows");
    auto sizes = t->sizes().vec();
    sizes[0] = samples;
    *t = t->expand(sizes).contiguous();
  }
  return e;
}

}  // namespace studio::pipeline

#include "pipeline/embeddings.h"

#include <ATen/ops/empty.h>

#include "io/tensor_file.h"
#include "parallel/job_ranks.h"
#include "plan/error.h"
#include "plan/family.h"
#include "text/prompt.h"

namespace studio::pipeline {

namespace {

Embeddings from_words(const plan::JobSpec& job, const plan::ModelFolder& model, parallel::Mesh& mesh,
                      at::ScalarType dtype, const at::Device& device,
                      const std::function<void(const std::string&)>& log) {
  const int64_t L = job.max_sequence_length, D = model.text_encoder->d_model;
  // Shared on the rank's device (NCCL takes no host tensor), in float32 on every rank alike.
  const auto opts = at::TensorOptions(at::kFloat).device(device);
  Embeddings e{at::empty({1, L, D}, opts), at::empty({1, L, D}, opts), {}};
  if (parallel::encodes(mesh)) {
    auto words = text::encode_prompts(model, job.prompt, job.negative_prompt, int(L), dtype, device, log);
    e.prompt = words.prompt_embeds.to(opts).contiguous();
    e.negative = words.negative_prompt_embeds.to(opts).contiguous();
    e.record = {{"input_ids", words.input_ids}, {"negative_input_ids", words.negative_input_ids}};
  }
  parallel::share_encoded(mesh, e.prompt);
  parallel::share_encoded(mesh, e.negative);
  e.record.insert(e.record.begin(), {{"prompt_embeds", e.prompt}, {"negative_prompt_embeds", e.negative}});
  return e;
}

Embeddings from_file(const plan::JobSpec& job, const plan::ModelFolder& model) {
  const auto& rules = plan::rules_of(model);
  io::TensorFile file(job.prompt_embeds_file, "--prompt_embeds");
  Embeddings e;
  e.prompt = file.get("prompt_embeds", 3, "[B, T, D]");
  if (rules.classifier_free() && job.guidance_scale > 1)
    e.negative = file.get("negative_prompt_embeds", 3, "[B, T, D]");
  if (rules.takes_pooled_text()) e.pooled = file.get("pooled_prompt_embeds", 2, "[B, P]");
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

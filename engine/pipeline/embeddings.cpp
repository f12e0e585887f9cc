#include "pipeline/embeddings.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/tensor.h>

#include <tuple>
#include <vector>

#include "io/weights/tensor_file.h"
#include "models/family_runtime.h"
#include "parallel/job_ranks.h"
#include "pipeline/kept_embeddings.h"
#include "pipeline/making_room.h"
#include "text/encode/encoder_room.h"
#include "plan/error.h"
#include "plan/family.h"

namespace studio::pipeline {

namespace {

// The encoding rank's tensor on every rank: its shape first (how many rows an encoder makes may depend on the
// text: HunyuanVideo-1.5's real rows), then its values, on the rank's device (NCCL takes no host tensor), float32;
// undefined on every rank where the encoder made none.
void share(parallel::Mesh& mesh, at::Tensor& t, const at::TensorOptions& opts) {
  const bool mine = parallel::encodes(mesh);
  std::vector<int64_t> shape(4, 0);  // dims, then the sizes
  if (mine && t.defined()) {
    shape[0] = t.dim();
    for (int64_t d = 0; d < t.dim(); ++d) shape[size_t(d) + 1] = t.size(d);
  }
  auto said = at::tensor(shape, at::kLong).to(opts.device());
  parallel::share_encoded(mesh, said);
  said = said.cpu();
  const int64_t dims = said[0].item<int64_t>();
  if (dims == 0) {
    t = at::Tensor();
    return;
  }
  std::vector<int64_t> sizes;
  for (int64_t d = 0; d < dims; ++d) sizes.push_back(said[d + 1].item<int64_t>());
  t = mine ? t.to(opts).contiguous() : at::empty(sizes, opts);
  if (t.numel() > 0) parallel::share_encoded(mesh, t);  // a text with no rows for an encoder: its shape says all
}

// The job's texts through the family's encoders, once more after `make_room` where they run out of memory.
text::PromptEmbeds encode(const plan::JobSpec& job, const plan::ModelFolder& model, at::ScalarType dtype,
                          const at::Device& device, const std::function<void(const std::string&)>& log,
                          const std::function<bool()>& make_room) {
  const bool on_cpu = job.text_encoder_device == "cpu";  // float32 there: CPUs are slow in half precision
  // Encoders the job puts on the CPU gain nothing from the device's memory: nothing is let go for them.
  const std::function<bool()> room = on_cpu && !device.is_cpu() ? std::function<bool()>() : make_room;
  const text::RoomForEncoders before_the_cpu(room);  // asked before an encoder is sent to the CPU for want of room
  return again_with_room(
      [&] {
        return models::encode_prompts(model, job, on_cpu ? at::kFloat : dtype,
                                      on_cpu ? at::Device(at::kCPU) : device, log);
      },
      room, "encoding the texts", "they run again", log);
}

Embeddings from_words(const plan::JobSpec& job, const plan::ModelFolder& model, parallel::Mesh& mesh,
                      at::ScalarType dtype, const at::Device& device,
                      const std::function<void(const std::string&)>& log, const std::function<bool()>& make_room) {
  Embeddings e;
  text::PromptEmbeds words;
  if (parallel::encodes(mesh)) {
    words = encode(job, model, dtype, device, log, make_room);
    e.record = words.input_ids;
  }
  const auto opts = at::TensorOptions(at::kFloat).device(device);
  for (auto [name, t, encoded] :
       {std::tuple{"negative_prompt_embeds_2", &e.negative_2, &words.negative_prompt_embeds_2},
        std::tuple{"prompt_embeds_2", &e.prompt_2, &words.prompt_embeds_2},
        std::tuple{"pooled_prompt_embeds", &e.pooled, &words.pooled_prompt_embeds},
        std::tuple{"negative_prompt_embeds", &e.negative, &words.negative_prompt_embeds},
        std::tuple{"prompt_embeds", &e.prompt, &words.prompt_embeds}}) {
    *t = *encoded;
    share(mesh, *t, opts);
    if (t->defined()) e.record.insert(e.record.begin(), {name, *t});
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
  // A second encoder's rows (HunyuanVideo-1.5's ByT5), where the file has them: none is no text in quotes.
  if (file.has("prompt_embeds_2")) e.prompt_2 = file.get("prompt_embeds_2", 3, "[B, T2, D2]");
  if (e.negative.defined() && file.has("negative_prompt_embeds_2"))
    e.negative_2 = file.get("negative_prompt_embeds_2", 3, "[B, T2, D2]");
  return e;
}

// The last run's embeddings where the encoding rank finds them kept for the same words, else the words'. The
// encoding rank decides for every rank, so that all take the same path (and the same collectives).
Embeddings kept_or_words(const plan::JobSpec& job, const plan::ModelFolder& model, parallel::Mesh& mesh,
                         at::ScalarType dtype, const at::Device& device,
                         const std::function<void(const std::string&)>& log, KeptEmbeddings& kept,
                         const std::function<bool()>& make_room) {
  const std::string key = KeptEmbeddings::key_of(job, model, dtype, device);
  auto found = at::full({1}, kept.holds(key) ? 1 : 0, at::TensorOptions(at::kLong).device(device));
  parallel::share_encoded(mesh, found);
  if (found.cpu().item<int64_t>()) {
    log("the prompt embeddings are kept from the last run (the same texts and text encoders): no encoder runs");
    return kept.reuse();
  }
  Embeddings e = from_words(job, model, mesh, dtype, device, log, make_room);
  kept.keep(key, e);
  return e;
}

}  // namespace

Embeddings prompt_embeddings(const plan::JobSpec& job, const plan::ModelFolder& model, parallel::Mesh& mesh,
                             at::ScalarType dtype, const at::Device& device,
                             const std::function<void(const std::string&)>& log, KeptEmbeddings* kept,
                             const std::function<bool()>& make_room) {
  Embeddings e = !job.prompt.empty() && kept ? kept_or_words(job, model, mesh, dtype, device, log, *kept, make_room)
                 : job.prompt.empty()    ? from_file(job, model)
                                         : from_words(job, model, mesh, dtype, device, log, make_room);
  const int64_t samples = job.num_videos_per_prompt;
  for (at::Tensor* t : {&e.prompt, &e.negative, &e.pooled, &e.prompt_2, &e.negative_2}) {
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

#include "pipeline/kept_embeddings.h"

#include <cstdio>
#include <stdexcept>

#include "io/weights/lora.h"
#include "pipeline/file_identity.h"

namespace studio::pipeline {

std::string KeptEmbeddings::key_of(const plan::JobSpec& job, const plan::ModelFolder& model, at::ScalarType dtype,
                                   const at::Device& device) {
  // A field per line, so that no two texts run together into the same key.
  std::string key = model.dir + "\n" + model.variant.id + "\n" + job.prompt + "\n" + job.prompt_2 + "\n" +
                    job.negative_prompt + "\n" + std::to_string(job.max_sequence_length) + "\n" +
                    (job.guidance_scale > 1 ? "negative" : "") + (job.guidance_scale_2 > 1 ? " negative 2" : "") +
                    "\n" + job.text_encoder_device + " " + std::string(c10::toString(dtype)) + " " + device.str() +
                    (job.allow_tf32 ? " tf32" : "") + "\n";
  for (const char* part : {"text_encoder", "text_encoder_2", "tokenizer", "tokenizer_2"})
    key += part_identity(model, part);
  for (const auto& use : model.loras)
    if (io::lora_changes_text_encoders(model, use.file)) {
      char scale[32];
      std::snprintf(scale, sizeof scale, " %a\n", use.scale);  // exact: any change of strength is another key
      key += file_identity(use.file) + scale;
    }
  return key;
}

void KeptEmbeddings::keep(const std::string& key, const Embeddings& e) {
  key_ = key;
  embeddings_ = e;
  kept_ = true;
}

const Embeddings& KeptEmbeddings::reuse() const {
  if (!kept_)
    throw std::logic_error("the encoding rank reuses the last run's prompt embeddings, but this rank kept none");
  return embeddings_;
}

}  // namespace studio::pipeline

// What a worker serving several runs keeps of the words (dit-worker --serve, the studio's ranks): the last run's
// prompt embeddings, so that a run that changes only what the transformer sees (the strength of a LoRA that changes
// no text encoder, the seed, steps, size, guidance above 1) runs no text encoder, and needs no memory for one beside
// a kept transformer.
#pragma once
#include <string>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include "pipeline/embeddings.h"
#include "plan/job.h"

namespace studio::pipeline {

class KeptEmbeddings {
 public:
  // What the embeddings of `job`'s words depend on: its texts and whether it encodes a negative one, the text
  // encoders' and tokenizers' files as they are now, the LoRAs where they change a text encoder, where and in what
  // dtype the encoders run.
  static std::string key_of(const plan::JobSpec& job, const plan::ModelFolder& model, at::ScalarType dtype,
                            const at::Device& device);

  // Whether the kept embeddings were made for `key`.
  bool holds(const std::string& key) const { return kept_ && key == key_; }
  // What every rank keeps after encoding (or receiving) a run's words; what reuse() returns.
  void keep(const std::string& key, const Embeddings& e);
  // The kept embeddings, when the encoding rank found them for this run (std::logic_error where none are kept).
  const Embeddings& reuse() const;

 private:
  std::string key_;
  bool kept_ = false;
  Embeddings embeddings_;
};

}  // namespace studio::pipeline

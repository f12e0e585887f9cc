// The job's first stage: the prompt embeddings of every sample, from words (encoded on the encoding rank and
// shared with the others) or from a --prompt_embeds file.
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "parallel/mesh.h"
#include "plan/job.h"

namespace studio::pipeline {

struct Embeddings {
  at::Tensor prompt, negative;  // [samples, T, D]; negative undefined without classifier-free guidance
  at::Tensor pooled;            // [samples, P], for a family that takes a pooled text vector (FLUX)
  at::Tensor prompt_2, negative_2;  // [samples, T2, D2]: a second encoder's rows (HunyuanVideo-1.5's ByT5)
  // What --save_tensors records of this stage: the embeddings and, from words, the token ids.
  std::vector<std::pair<std::string, at::Tensor>> record;
};

class KeptEmbeddings;

// A file's single row is repeated for every sample, as num_videos_per_prompt does.
// With `kept` (a worker serving several runs) the words' embeddings are the last run's where they would be the
// same, and are kept for the next. An encoder running out of memory on the encoding rank calls `make_room` (which
// lets go what the worker keeps: false when it kept nothing) and encodes again once.
Embeddings prompt_embeddings(const plan::JobSpec& job, const plan::ModelFolder& model, parallel::Mesh& mesh,
                             at::ScalarType dtype, const at::Device& device,
                             const std::function<void(const std::string&)>& log, KeptEmbeddings* kept = nullptr,
                             const std::function<bool()>& make_room = {});

}  // namespace studio::pipeline

// One job in one process: load what it needs, denoise, decode, write what was asked (--output clip,
// --save_tensors). dit-launch runs it directly; the workers will run it per rank.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "parallel/mesh.h"
#include "pipeline/denoise.h"
#include "pipeline/kept_embeddings.h"
#include "pipeline/kept_transformers.h"
#include "plan/job.h"

namespace studio::pipeline {

struct JobResult {
  at::Tensor final_latents;  // [B, F, C, H, W] float32, CPU
  int frames = 0;            // decoded video frames per sample (0 when nothing was decoded)
  std::string encoder;       // the clip's encoder, when a clip was written
  std::vector<std::string> outputs;  // the files written (world rank 0)
  double seconds_loading = 0;
  double seconds_denoising = 0;
  double seconds_decoding = 0;
};

// What a worker serving several runs keeps from one to the next (dit-worker --serve): the transformers and the
// words' embeddings.
struct KeptBetweenRuns {
  KeptTransformers transformers;
  KeptEmbeddings embeddings;
};

// `job` must already have the model's defaults applied and have passed plan::validate() (and, on a mesh
// of several ranks, plan::validate_parallel()). Every rank of the mesh calls it; the videos are split
// among the data-parallel groups; world rank 0 decodes and writes the outputs.
// With `kept` the transformer and the prompt embeddings come from it where they are the same, and stay in it after
// the run.
JobResult run_job(const plan::JobSpec& job, const plan::ModelFolder& model, parallel::Mesh& mesh, const Hooks& hooks,
                  const std::function<void(const std::string&)>& log, KeptBetweenRuns* kept = nullptr);

}  // namespace studio::pipeline

// The switches that replay or keep a run, beside the main path: --latents (the initial noise),
// --sampler_noise (the noise a stochastic sampler adds at each step), --save_tensors (what the run
// computed) and --keep_partial (the latents a cancelled run had reached).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "parallel/job_ranks.h"
#include "plan/job.h"
#include "sampling/noise.h"

namespace studio::pipeline {

using Metadata = std::map<std::string, std::string>;
using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

// The slice's initial noise in the model's latent layout: its rows of --latents' latents_init when the
// job names a file (FLUX's packed [B, N, 4C], unpacked here; InputError unless it has the job's shape),
// else drawn from `seeded` (as the reference draws it: unpacked).
at::Tensor initial_latents(const plan::JobSpec& job, const plan::ModelFolder& model, const parallel::SampleSlice& slice,
                           sampling::SeededNoise& seeded);

// The slice's rows of --sampler_noise; nullptr when the job names no file.
std::unique_ptr<sampling::NoiseSource> recorded_noise(const plan::JobSpec& job, const parallel::SampleSlice& slice);

// The latents of the last finished step, for --keep_partial.
struct PartialLatents {
  at::Tensor latents;
  int step = 0, total = 0;
};
// Writes them beside the output the user named (NAME.partial.safetensors, in the layout --latents takes),
// when there is one; returns what was kept, in words ("" when nothing), which the run's last line says.
std::string keep_partial_latents(const plan::JobSpec& job, const plan::ModelFolder& model, Metadata meta,
                                 const PartialLatents& partial);

}  // namespace studio::pipeline

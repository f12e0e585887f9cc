// One job in one process: load what it needs, denoise, write what was asked. dit-launch runs it
// directly; the workers will run it per rank.
#pragma once
#include <functional>
#include <string>

#include <ATen/core/Tensor.h>

#include "pipeline/denoise.h"
#include "plan/job.h"

namespace studio::pipeline {

struct JobResult {
  at::Tensor final_latents;  // [B, F, C, H, W] float32, CPU
  double seconds_loading = 0;
  double seconds_denoising = 0;
};

// `job` must already have the model's defaults applied and have passed plan::validate().
JobResult run_job(const plan::JobSpec& job, const plan::ModelFolder& model, const Hooks& hooks,
                  const std::function<void(const std::string&)>& log);

}  // namespace studio::pipeline

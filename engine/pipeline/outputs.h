// The job's last stages: the final latents decoded (on the decoding ranks) and written as clips (on the
// writing rank), and what a clip and its sidecar record about the job.
#pragma once
#include <functional>
#include <map>
#include <string>

#include <ATen/core/Tensor.h>

#include "parallel/mesh.h"
#include "pipeline/run_job.h"
#include "plan/error.h"

namespace studio::pipeline {

// What a clip and its sidecar record about the job that made it.
std::map<std::string, std::string> job_metadata(const plan::JobSpec& job, const plan::ModelFolder& model,
                                                const plan::ParallelConfig& par);

// How a rank that writes nothing ends a cancelled job with --keep_partial: rank 0 alone knows what it kept.
inline Cancelled cancelled_on_a_reader() { return Cancelled("anything kept is written by rank 0"); }

// Decodes r.final_latents and writes the clips --output names, filling r's frames, outputs and encoder.
// Returns the decoded video [B, 3, T, H, W] on the writing rank when --save_tensors wants it. Out of
// memory at full size, it calls `make_room` (which lets go what a serving worker keeps: false when it kept
// nothing) and decodes at full size again where it made room, else in tiles, from the same latents: nothing is
// denoised again.
at::Tensor decode_and_write(const plan::JobSpec& job, const plan::ModelFolder& model, parallel::Mesh& mesh,
                            const Hooks& hooks, at::ScalarType dtype, const at::Device& device, JobResult& r,
                            const std::function<void(const std::string&)>& log,
                            const std::function<bool()>& make_room = {});

}  // namespace studio::pipeline

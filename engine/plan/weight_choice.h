// Where a job's weights come from and how they are kept (--transformer, --transformer_2, --text_encoder,
// --text_encoder_2, --quantize): checked with the rest of the job before any work, then put on the folder the
// loaders read.
#pragma once
#include <string>
#include <vector>

#include "plan/job.h"
#include "plan/model_folder.h"
#include "plan/parallel.h"

namespace studio::plan {

void check_weight_choices(const JobSpec& job, const ModelFolder& model, std::vector<Problem>& out);
// Bytes per transformer weight as the job keeps them, for a transformer of `params` weights: a quantized single
// file's own size over them (a GGUF keeps its small tensors in F32, so its size says more than its type), one
// byte under --quantize fp8 (the few weights that are not linear layers' are a rounding error), else
// `bytes_per_value` (a file of float types included: it loads as the run's dtype).
double weight_bytes_per_param(const JobSpec& job, double params, int bytes_per_value);
// T5's weights as the job keeps them: a single file (--text_encoder, FLUX.1's --text_encoder_2) by its size plus
// the token table, which is made whole in the run's dtype; else every weight in `bytes_per_value`.
double t5_weight_bytes(const JobSpec& job, const ModelFolder& model, int bytes_per_value);
// The job's weights kept another way, for a configuration: each flag that would change them (--quantize fp8,
// --offload blocks off the CPU, --shard_weights where ranks run the same blocks, PipeFusion stages in place of the
// sequence ranks; fp8 with each of the others where no one way fits alone), with the peak memory per rank it
// would give and whether that fits `memory_gib` (0: unknown, everything fits). The job's device says where
// it runs: "cpu" (dit-launch and the studio set it so on a machine without GPUs) is counted in host memory.
struct StorageChoice {
  std::string flag;  // "" for the job as given
  ParallelConfig config;  // the configuration and job with the flag
  JobSpec job;
  double peak_gib = 0;
  bool fits = true;
};
std::vector<StorageChoice> storage_choices(const ParallelConfig& p, const JobSpec& job, const ModelFolder& model,
                                           int bytes_per_value, double memory_gib);
// The folder with the job's single files and quantization (ModelFolder::weight_files, ::quantize).
void use_job_weights(ModelFolder& model, const JobSpec& job);

}  // namespace studio::plan

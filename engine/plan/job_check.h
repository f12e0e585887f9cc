// The one sequence every interface runs before a job starts (the launcher on its flags, the studio on
// every edit, each worker on its job file): the model's defaults filled in, then every problem with the job
// and with its parallel configuration on the machine at hand.
#pragma once
#include <vector>

#include "plan/job.h"
#include "plan/parallel.h"

namespace studio::plan {

// What is known of the machine the job will run on.
struct Machine {
  int processes = 1;       // GPUs, or CPU processes
  double memory_gib = 0;   // each GPU's memory; 0 when unknown (no memory check)
  bool gpus = false;
};

// Fills `job`'s open sizes from the model; returns every problem, empty when the job can run.
std::vector<Problem> check_job(JobSpec& job, const ParallelConfig& p, const ModelFolder& model, const Machine& machine);

}  // namespace studio::plan

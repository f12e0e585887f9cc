#include "plan/job_check.h"

namespace studio::plan {

std::vector<Problem> check_job(JobSpec& job, const ParallelConfig& p, const ModelFolder& model, const Machine& machine) {
  apply_model_defaults(job, model);
  auto problems = validate(job, model);
  const auto more = validate_parallel(p, job, model, machine.processes, machine.memory_gib,
                                      bytes_per_value(job, machine.gpus));
  problems.insert(problems.end(), more.begin(), more.end());
  return problems;
}

}  // namespace studio::plan

#include "plan/parallel_defaults.h"

#include <algorithm>
#include <cstdio>

#include "plan/family.h"

namespace studio::plan {

ParallelConfig default_parallel(JobSpec job, const ModelFolder& model, int processes) {
  apply_model_defaults(job, model);
  const auto& rules = rules_of(model);
  ParallelConfig p;
  int rest = std::max(1, processes);
  if (rules.classifier_free() && job.guidance_scale > 1 && rest % 2 == 0) {
    p.use_cfg_parallel = true;
    rest /= 2;
  }
  const int heads = rules.attention_heads(model);
  for (int u = rest; u >= 1; --u)
    if (rest % u == 0 && heads % u == 0) {
      p.ulysses_degree = u;
      break;
    }
  p.ring_degree = rest / p.ulysses_degree;
  if (validate_parallel(p, job, model, processes).empty()) return p;
  const auto valid = valid_configs(job, model, processes, p);
  return valid.empty() ? ParallelConfig{} : valid.front();
}

std::optional<Problem> cpu_processes_problem(int processes, int cores) {
  if (cores <= 0 || processes <= cores) return std::nullopt;
  return Problem{"world_size", std::to_string(processes) + " processes on a CPU with " + std::to_string(cores) +
                                   " cores: they share the cores, so each step is slower than with " +
                                   std::to_string(cores) + " or fewer; use at most " + std::to_string(cores) +
                                   " (the degrees multiply to the process count)"};
}

std::optional<Problem> cpu_memory_problem(const ParallelConfig& p, JobSpec job, const ModelFolder& model,
                                          double memory_gib) {
  if (memory_gib <= 0) return std::nullopt;
  apply_model_defaults(job, model);
  const double each = estimate_memory(p, job, model, bytes_per_value(job, false)).peak_gib();
  const int n = p.world_size();
  if (each * n <= memory_gib) return std::nullopt;
  char text[256];
  std::snprintf(text, sizeof text,
                "%d process%s of about %.1f GiB each need %.1f GiB, more than this machine's %.1f GiB: use fewer "
                "processes, or a smaller size or fewer frames",
                n, n == 1 ? "" : "es", each, each * n, memory_gib);
  return Problem{"memory", text};
}

}  // namespace studio::plan

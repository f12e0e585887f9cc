// The parallel configuration the studio starts from on the machine at hand, and the CPU's limit.
// Torch-free, so the studio and the launcher decide alike.
#pragma once
#include <optional>

#include "plan/parallel.h"

namespace studio::plan {

// The configuration for `processes` processes (GPUs) until the cost model ranks them, by this rule:
//  1. CFG parallel when the family has classifier-free guidance, the job's guidance is on (> 1) and the
//     processes are even: its two branches need almost no communication;
//  2. Ulysses at the largest degree that divides both the processes left and the attention heads (an
//     even split of the heads, one all-to-all per block);
//  3. Ring for the rest (any head count).
// When that breaks one of the job's rules, the valid configuration nearest to it; one process when no
// configuration for `processes` is valid. The job's open sizes are the model's defaults.
ParallelConfig default_parallel(JobSpec job, const ModelFolder& model, int processes);

// CPU ranks are processes of their own that share the cores and the memory. Above `cores` each step only
// gets slower: a problem of field "world_size" (the studio refuses it unless oversubscription is asked for,
// then warns). Nothing at or below, or when cores is unknown (0).
std::optional<Problem> cpu_processes_problem(int processes, int cores);
// The plan's memory of one rank (estimate_memory, float32) times the processes against the machine's
// `memory_gib`: a problem of field "memory" when they need more; nothing when the memory is unknown (0).
std::optional<Problem> cpu_memory_problem(const ParallelConfig& p, JobSpec job, const ModelFolder& model,
                                          double memory_gib);

}  // namespace studio::plan

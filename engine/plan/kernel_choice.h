// The GPU kernels a job may ask for (--attention_kernel, --fp8_gemm), checked with the rest of the job.
#pragma once
#include <string>
#include <vector>

#include "plan/job.h"

namespace studio::plan {

// --attention_kernel's values: auto (the fastest, timed), the three fused kernels, and LibTorch's own choice.
inline const std::vector<std::string>& attention_kernels() {
  static const std::vector<std::string> names = {"auto", "flash", "cudnn", "efficient", "torch"};
  return names;
}

void check_kernel_choices(const JobSpec& job, std::vector<Problem>& out);

}  // namespace studio::plan

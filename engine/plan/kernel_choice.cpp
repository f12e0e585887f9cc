#include "plan/kernel_choice.h"

#include <algorithm>

namespace studio::plan {

void check_kernel_choices(const JobSpec& job, std::vector<Problem>& out) {
  const auto& kernels = attention_kernels();
  if (std::find(kernels.begin(), kernels.end(), job.attention_kernel) == kernels.end())
    out.push_back({"attention_kernel", "--attention_kernel " + job.attention_kernel +
                                           ": not a kernel; auto (the fastest, timed on the first step), flash, "
                                           "cudnn, efficient or torch (LibTorch's own choice)"});
  if (job.fp8_gemm && job.dtype == "float16")
    out.push_back({"fp8_gemm", "--fp8_gemm with --dtype float16: the float8 products give bfloat16; use --dtype "
                               "bfloat16 (or auto) with --fp8_gemm"});
}

}  // namespace studio::plan

// Which fused attention kernel a CUDA run uses (--attention_kernel). The kernels LibTorch offers (flash,
// cuDNN, memory-efficient) differ in speed by shape, head size, dtype and GPU, so the default (auto) times
// each one that runs on a run's first attention of each shape and keeps the fastest for the rest of the run;
// a named one is used as it is. compat::attention and compat::attention_with_lse (torch_compat.h) follow the
// choice; on the CPU there is one kernel and the choice is not consulted.
#pragma once
#include <string>
#include <vector>

namespace studio::compat {

// "auto", "flash", "cudnn", "efficient" or "torch" (at::scaled_dot_product_attention's own dispatch; with the
// log-sum-exp Ring needs, flash for 16-bit tensors and memory-efficient for float32, as before the choice).
void set_attention_kernel(const std::string& name);

// What was chosen since the last call, a line per shape, for the log and the events: "attention [2, 30, 17776,
// 64] bfloat16: cudnn (cudnn 8.10 ms, flash 9.42 ms, efficient 12.61 ms)".
std::vector<std::string> take_attention_choices();

}  // namespace studio::compat

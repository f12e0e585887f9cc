// Test helpers with tensors: reference tensors and their distance to ours.
#pragma once
#include <ATen/core/Tensor.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/max.h>

#include "io/tensor_file.h"
#include "support.h"

namespace studio::test {

inline at::Tensor golden_tensor(const std::string& case_name, const std::string& tensor) {
  io::TensorFile f(golden_case(case_name) + "/golden.safetensors", "golden");
  return f.get(tensor, -1, "");
}

inline double max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes()) {
    qWarning("shape mismatch");
    return 1e30;
  }
  return at::max(at::abs(a.to(at::kCPU, at::kFloat) - b.to(at::kCPU, at::kFloat))).template item<double>();
}

}  // namespace studio::test

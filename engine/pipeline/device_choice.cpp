#include "pipeline/device_choice.h"

#include <ATen/Context.h>

#include "plan/error.h"

namespace studio::pipeline {

at::Device pick_device(const std::string& name) {
  if (name == "auto") return at::hasCUDA() ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
  if (name == "cpu") return at::kCPU;
  if (name.rfind("cuda", 0) == 0) {
    if (!at::hasCUDA())
      throw InputError("--device " + name + ": this build or machine has no CUDA device; use --device cpu");
    return at::Device(name);
  }
  throw InputError("--device '" + name + "': expected auto, cpu, cuda or cuda:N");
}

at::ScalarType pick_dtype(const std::string& name, const at::Device& dev, const std::string& flag) {
  if (name == "auto") return dev.is_cuda() ? at::kBFloat16 : at::kFloat;
  if (name == "float32") return at::kFloat;
  if (name == "bfloat16") return at::kBFloat16;
  if (name == "float16") return at::kHalf;
  throw InputError(flag + " '" + name + "': expected auto, float32, bfloat16 or float16");
}

}  // namespace studio::pipeline

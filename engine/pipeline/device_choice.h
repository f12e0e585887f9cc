// What a job's --device and --dtype (and dit-worker --calibrate's dtype) mean, in one place.
#pragma once
#include <string>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

namespace studio::pipeline {

// "auto" (CUDA when present), "cpu", "cuda", "cuda:N"; InputError otherwise or without CUDA.
at::Device pick_device(const std::string& name);
// "auto" (bfloat16 on CUDA, float32 on the CPU), "float32", "bfloat16", "float16"; InputError names `flag`.
at::ScalarType pick_dtype(const std::string& name, const at::Device& dev, const std::string& flag = "--dtype");

}  // namespace studio::pipeline

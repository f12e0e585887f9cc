// Test helpers with tensors: reference tensors, their distance to ours, and the bounds we hold them to.
#pragma once
#include <ATen/core/Tensor.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/max.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "io/weights/tensor_file.h"
#include "plan/job.h"
#include "support.h"

namespace studio::test {

// The reference cases' tolerances (shared/goldens/README.md): one model call (a transformer step, the text
// encoder, rope tables), and a whole run (final latents) or a decoded video.
constexpr double kCallTolerance = 1e-4;
constexpr double kRunTolerance = 1e-3;

inline at::Tensor golden_tensor(const std::string& case_name, const std::string& tensor) {
  io::TensorFile f(golden_case(case_name) + "/golden.safetensors", "golden");
  return f.get(tensor, -1, "");
}

inline at::Tensor golden_ids(const std::string& case_name, const std::string& tensor) {
  return io::TensorFile(golden_case(case_name) + "/golden.safetensors", "golden").get_int64(tensor);
}

// The job of an image-to-video reference run: its folder, its picture, and the size and text length of the
// reference's call.
inline plan::JobSpec picture_job(const std::string& name) {
  const auto g = golden_json(name);
  plan::JobSpec job;
  job.model_dir = golden_case(name);
  job.image_file = golden_case(name) + "/" + std::string(g["image"]);
  job.height = g["height"], job.width = g["width"], job.num_frames = g["num_frames"];
  job.max_sequence_length = g["max_sequence_length"];
  return job;
}

inline std::string shape_of(const at::Tensor& t) {
  std::string s = "[";
  for (int64_t d = 0; d < t.dim(); ++d) s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + "]";
}

// Throws when the shapes differ: tensors of other shapes are never "close" nor "different".
inline double max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes())
    throw std::invalid_argument("comparing tensors of different shapes: " + shape_of(a) + " and " + shape_of(b));
  return at::max(at::abs(a.to(at::kCPU, at::kFloat) - b.to(at::kCPU, at::kFloat))).template item<double>();
}

inline double max_abs(const at::Tensor& t) { return at::max(at::abs(t.to(at::kCPU, at::kFloat))).template item<double>(); }

// A bound for two float32 results that are equal in exact arithmetic but computed in another batching or
// order: `tolerance` scaled by the values' magnitude (never below `tolerance` itself). Their rounding differs
// with the CPU's kernels, the BLAS and the thread count, and grows with the values.
inline double scaled_bound(const at::Tensor& reference, double tolerance) {
  return tolerance * std::max(1.0, max_abs(reference));
}

}  // namespace studio::test

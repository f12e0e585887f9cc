#include "sampling/noise.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/randn.h>

#include "io/safetensors_file.h"
#include "plan/error.h"

namespace studio::sampling {

SeededNoise::SeededNoise(uint64_t seed) : gen_(at::make_generator<at::CPUGeneratorImpl>(seed)) {}

at::Tensor SeededNoise::draw(const std::vector<int64_t>& shape) {
  return at::randn(shape, gen_, at::TensorOptions().dtype(at::kFloat));
}

at::Tensor SeededNoise::step_noise(int, const std::vector<int64_t>& shape, int draws) {
  at::Tensor t;
  for (int i = 0; i < draws; ++i) t = draw(shape);
  return t;
}

at::Tensor RecordedNoise::step_noise(int step, const std::vector<int64_t>& shape, int) {
  if (step >= noise_.size(0))
    throw InputError("--sampler_noise: scheduler_noise holds " + std::to_string(noise_.size(0)) +
                     " steps but the run needs noise for step " + std::to_string(step + 1));
  at::Tensor t = noise_[step];
  if (t.sizes().vec() != shape)
    throw InputError("--sampler_noise: scheduler_noise[" + std::to_string(step) + "] has shape " +
                     io::shape_str(t.sizes().vec()) + " but the latents are " + io::shape_str(shape));
  return t;
}

}  // namespace studio::sampling

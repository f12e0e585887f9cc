#include "sampling/noise.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/randn.h>

#include "io/safetensors/safetensors_file.h"
#include "plan/error.h"

#include <stdexcept>

namespace studio::sampling {

SeededNoise::SeededNoise(uint64_t first_seed, int videos) {
  for (int i = 0; i < videos; ++i) gens_.push_back(at::make_generator<at::CPUGeneratorImpl>(first_seed + uint64_t(i)));
}

SeededNoise SeededNoise::snapshot() const {
  SeededNoise copy(0, 0);
  for (const auto& g : gens_) copy.gens_.push_back(g.clone());
  return copy;
}

at::Tensor SeededNoise::draw(const std::vector<int64_t>& shape) {
  if (gens_.size() == 1) return at::randn(shape, gens_[0], at::TensorOptions().dtype(at::kFloat));
  if (shape.empty() || shape[0] != int64_t(gens_.size()))
    throw std::logic_error("SeededNoise: batch of " + io::shape_str(shape) + " for " + std::to_string(gens_.size()) +
                           " videos");
  std::vector<int64_t> one = shape;
  one[0] = 1;
  std::vector<at::Tensor> rows;
  for (auto& g : gens_) rows.push_back(at::randn(one, g, at::TensorOptions().dtype(at::kFloat)));
  return at::cat(rows, 0);
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

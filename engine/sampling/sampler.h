// What the denoising loop asks of a family's sampler: its steps, the timestep of each (what the model is
// given, and the value guidance rules read), and one update of the latents from the model's output.
#pragma once
#include <cstdint>

#include <ATen/core/Tensor.h>

#include "sampling/noise.h"

namespace studio::sampling {

class Sampler {
 public:
  virtual ~Sampler() = default;
  virtual int steps() const = 0;
  // Step i's timestep on the training scale (0-1000).
  virtual double timestep(int i) const = 0;
  // What the model is given as its timestep at step i, [batch] on `device`.
  virtual at::Tensor model_timestep(int i, int64_t batch, const at::Device& device) const = 0;
  // One update of `sample` (float32) given the (guided) model output at step i.
  virtual at::Tensor step(int i, const at::Tensor& model_output, const at::Tensor& sample, NoiseSource* noise) = 0;
};

}  // namespace studio::sampling

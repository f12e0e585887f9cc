#include "sampling/flow_match.h"

#include <cmath>

#include <ATen/TensorOperators.h>
#include <ATen/ops/full.h>

namespace studio::sampling {

double flux_mu(const plan::FlowMatchConfig& c, int64_t image_tokens) {
  const double m = (c.max_shift - c.base_shift) / double(c.max_image_seq_len - c.base_image_seq_len);
  const double b = c.base_shift - m * c.base_image_seq_len;
  return double(image_tokens) * m + b;
}

FlowMatchEuler::FlowMatchEuler(const plan::FlowMatchConfig& cfg, int steps, int64_t image_tokens)
    : train_steps_(cfg.num_train_timesteps) {
  // np.linspace(1, 1/N, N) in float64 (the last value exactly the end), then float32 as the scheduler takes it.
  const double end = 1.0 / steps, delta = steps > 1 ? (end - 1.0) / (steps - 1) : 0.0;
  const float exp_mu = float(std::exp(flux_mu(cfg, image_tokens)));
  const float shift = float(cfg.shift);
  for (int i = 0; i < steps; ++i) {
    const float s = float(i == steps - 1 ? end : 1.0 + i * delta);
    const float shifted = cfg.use_dynamic_shifting ? exp_mu / (exp_mu + (1.0f / s - 1.0f))
                                                   : shift * s / (1.0f + (shift - 1.0f) * s);
    sigmas_.push_back(shifted);
    timesteps_.push_back(shifted * float(train_steps_));
  }
  sigmas_.push_back(0.0f);
}

at::Tensor FlowMatchEuler::model_timestep(int i, int64_t batch, const at::Device& device) const {
  return at::full({batch}, timesteps_[size_t(i)] / 1000.0f, at::TensorOptions(at::kFloat).device(device));
}

at::Tensor FlowMatchEuler::step(int i, const at::Tensor& v, const at::Tensor& x, NoiseSource*) {
  const float dt = sigmas_[size_t(i) + 1] - sigmas_[size_t(i)];
  return x.to(at::kFloat) + double(dt) * v.to(at::kFloat);
}

}  // namespace studio::sampling

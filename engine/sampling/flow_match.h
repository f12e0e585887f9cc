// FLUX.1's sampler as FluxPipeline runs diffusers v0.32.2's FlowMatchEulerDiscreteScheduler: sigmas
// linspace(1, 1/N, N), shifted (by exp(mu) / (exp(mu) + 1/sigma - 1), mu read off the packed image's token
// count, when use_dynamic_shifting; else by the config's shift), a final 0; Euler steps
// x += (sigma[i+1] - sigma[i]) * v. In float32, as the reference computes them.
#pragma once
#include <vector>

#include "plan/families/flux_config.h"
#include "sampling/sampler.h"

namespace studio::sampling {

// FluxPipeline's calculate_shift: the line through (base_image_seq_len, base_shift) and
// (max_image_seq_len, max_shift), at `image_tokens` (extrapolated outside).
double flux_mu(const plan::FlowMatchConfig& cfg, int64_t image_tokens);

class FlowMatchEuler final : public Sampler {
 public:
  FlowMatchEuler(const plan::FlowMatchConfig& cfg, int steps, int64_t image_tokens);

  const std::vector<float>& sigmas() const { return sigmas_; }  // steps + 1
  int steps() const override { return int(sigmas_.size()) - 1; }
  double timestep(int i) const override { return timesteps_[size_t(i)]; }
  // t / 1000, which the model scales back by 1000 (as FluxPipeline passes it).
  at::Tensor model_timestep(int i, int64_t batch, const at::Device& device) const override;
  at::Tensor step(int i, const at::Tensor& model_output, const at::Tensor& sample, NoiseSource* noise) override;

 private:
  int train_steps_;
  std::vector<float> sigmas_, timesteps_;
};

}  // namespace studio::sampling

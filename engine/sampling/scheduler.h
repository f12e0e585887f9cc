// CogVideoX's samplers exactly as diffusers v0.32.2 runs them: CogVideoXDDIMScheduler (deterministic)
// and CogVideoXDPMScheduler (second-order multistep, fresh noise every step). Both: v-prediction,
// alphas-cumprod shifted by snr_shift_scale and rescaled to zero terminal SNR, in float64.
#pragma once
#include <vector>

#include <ATen/core/Tensor.h>

#include "plan/families/cogvideox_config.h"
#include "sampling/noise.h"
#include "sampling/sampler.h"

namespace studio::sampling {

class Scheduler final : public Sampler {
 public:
  Scheduler(const plan::CogVideoXSchedulerConfig& cfg, int num_inference_steps);

  const std::vector<int64_t>& timesteps() const { return timesteps_; }
  double alpha_cumprod(int64_t t) const { return alphas_cumprod_[size_t(t)]; }

  int steps() const override { return steps_; }
  double timestep(int i) const override { return double(timesteps_[size_t(i)]); }
  at::Tensor model_timestep(int i, int64_t batch, const at::Device& device) const override;  // int64
  at::Tensor step(int i, const at::Tensor& model_output, const at::Tensor& sample, NoiseSource* noise) override;

 private:
  double alpha_prev(int i) const;  // alphas_cumprod at the next (smaller) timestep, 1 past the end
  at::Tensor ddim_step(int i, const at::Tensor& model_output, const at::Tensor& sample) const;
  at::Tensor dpm_step(int i, const at::Tensor& model_output, const at::Tensor& sample, NoiseSource* noise);

  plan::CogVideoXSchedulerConfig cfg_;
  int steps_;
  std::vector<double> alphas_cumprod_;
  std::vector<int64_t> timesteps_;
  at::Tensor old_x0_;  // DPM: the previous step's prediction of the clean sample
};

// The guidance scale used at timestep `t`: static, or the dynamic rule of the CogVideoX pipeline,
// 1 + s (1 - cos(pi ((N - t) / N)^5)) / 2 with t the timestep value (so the base is negative on purpose).
double guidance_at(double scale, bool dynamic, int64_t t, int num_inference_steps);

}  // namespace studio::sampling

// Wan's sampler: diffusers 0.35.2's UniPCMultistepScheduler in its flow configuration (flow_prediction,
// use_flow_sigmas, predict_x0, final sigma 0). Sigmas 1 - linspace(1, 1/train, N + 1), shifted by
// shift * s / (1 + (shift - 1) * s), reversed, the last (0) replaced by a final 0; timesteps the sigmas x
// train steps truncated to integers. Each step first corrects the sample it is given (UniC, from the
// previous step's sample and model outputs), then predicts the next (UniP, multistep, order up to
// solver_order, lowered at the start and, with lower_order_final, at the end). The scalars are float32,
// as the reference computes them.
#pragma once
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "plan/families/wan_config.h"
#include "sampling/sampler.h"

namespace studio::sampling {

class UniPC final : public Sampler {
 public:
  UniPC(const plan::UniPCConfig& cfg, int steps);

  const std::vector<float>& sigmas() const { return sigmas_; }          // steps + 1
  const std::vector<int64_t>& timesteps() const { return timesteps_; }  // steps
  int steps() const override { return int(timesteps_.size()); }
  double timestep(int i) const override { return double(timesteps_[size_t(i)]); }
  // The integer timestep, as WanPipeline passes it.
  at::Tensor model_timestep(int i, int64_t batch, const at::Device& device) const override;
  // Steps must come in order, 0 first (the corrector and the multistep history read the previous ones).
  at::Tensor step(int i, const at::Tensor& model_output, const at::Tensor& sample, NoiseSource* noise) override;

 private:
  at::Tensor predict(int i, const at::Tensor& x, int order) const;
  // The sample step i was given, corrected from last_sample_ with x0 prediction `model_t`.
  at::Tensor correct(int i, const at::Tensor& model_t, int order) const;

  plan::UniPCConfig cfg_;
  std::vector<float> sigmas_;
  std::vector<int64_t> timesteps_;
  std::vector<at::Tensor> x0_history_;  // the converted model outputs (x0 predictions), oldest first
  at::Tensor last_sample_;             // the sample the last prediction started from
  int next_step_ = 0, lower_order_nums_ = 0, this_order_ = 0;
};

}  // namespace studio::sampling

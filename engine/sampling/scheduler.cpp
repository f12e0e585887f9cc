#include "sampling/scheduler.h"

#include <cmath>

#include <ATen/TensorOperators.h>
#include <ATen/ops/full.h>

#include "compat/torch_compat.h"

namespace studio::sampling {

Scheduler::Scheduler(const plan::CogVideoXSchedulerConfig& cfg, int steps) : cfg_(cfg), steps_(steps) {
  const int n = cfg.num_train_timesteps;
  // betas (scaled_linear: linspace of square roots, squared), cumulative product of 1 - beta.
  double cum = 1.0;
  alphas_cumprod_.resize(size_t(n));
  for (int i = 0; i < n; ++i) {
    const double f = n == 1 ? 0.0 : double(i) / (n - 1);
    double beta;
    if (cfg.beta_schedule == "scaled_linear") {
      const double a = std::sqrt(cfg.beta_start), b = std::sqrt(cfg.beta_end);
      beta = a + (b - a) * f;
      beta *= beta;
    } else {
      beta = cfg.beta_start + (cfg.beta_end - cfg.beta_start) * f;
    }
    cum *= 1.0 - beta;
    alphas_cumprod_[size_t(i)] = cum;
  }
  // SNR shift (as SD3): a / (s + (1 - s) a).
  for (double& a : alphas_cumprod_) a = a / (cfg.snr_shift_scale + (1 - cfg.snr_shift_scale) * a);
  if (cfg.rescale_betas_zero_snr) {
    const double s0 = std::sqrt(alphas_cumprod_.front()), sT = std::sqrt(alphas_cumprod_.back());
    for (double& a : alphas_cumprod_) {
      double s = (std::sqrt(a) - sT) * (s0 / (s0 - sT));
      a = s * s;
    }
  }
  // Timestep spacing (Table 2 of "Common Diffusion Noise Schedules and Sample Steps are Flawed").
  if (cfg.timestep_spacing == "trailing") {
    const double ratio = double(n) / steps;  // np.arange(n, 0, -ratio), rounded half to even, minus 1
    for (int i = 0; i < steps; ++i) timesteps_.push_back(int64_t(std::nearbyint(n - i * ratio)) - 1);
  } else if (cfg.timestep_spacing == "leading") {
    const int ratio = n / steps;
    for (int i = steps - 1; i >= 0; --i) timesteps_.push_back(int64_t(i) * ratio + cfg.steps_offset);
  } else {  // linspace
    for (int i = steps - 1; i >= 0; --i)
      timesteps_.push_back(int64_t(std::nearbyint(steps == 1 ? 0.0 : double(n - 1) * i / (steps - 1))));
  }
}

double Scheduler::alpha_prev(int i) const {
  const int64_t prev = timesteps_[size_t(i)] - cfg_.num_train_timesteps / steps_;
  if (prev >= 0) return alphas_cumprod_[size_t(prev)];
  return cfg_.set_alpha_to_one ? 1.0 : alphas_cumprod_.front();
}

at::Tensor Scheduler::model_timestep(int i, int64_t batch, const at::Device& device) const {
  return at::full({batch}, timesteps_[size_t(i)], at::TensorOptions(at::kLong).device(device));
}

at::Tensor Scheduler::step(int i, const at::Tensor& model_output, const at::Tensor& sample, NoiseSource* noise) {
  return cfg_.kind == plan::CogVideoXSampler::DDIM ? ddim_step(i, model_output, sample)
                                              : dpm_step(i, model_output, sample, noise);
}

at::Tensor Scheduler::ddim_step(int i, const at::Tensor& v, const at::Tensor& x) const {
  const double a = alpha_cumprod(timesteps_[size_t(i)]), a_prev = alpha_prev(i);
  const auto x0 = std::sqrt(a) * x - std::sqrt(1 - a) * v;  // v-prediction
  const double a_t = std::sqrt((1 - a_prev) / (1 - a));
  const double b_t = std::sqrt(a_prev) - std::sqrt(a) * a_t;
  return a_t * x + b_t * x0;
}

at::Tensor Scheduler::dpm_step(int i, const at::Tensor& v, const at::Tensor& x, NoiseSource* noise) {
  const double a = alpha_cumprod(timesteps_[size_t(i)]), a_prev = alpha_prev(i);
  const bool first_order = !old_x0_.defined() || timesteps_[size_t(i)] - cfg_.num_train_timesteps / steps_ < 0;
  auto lambda = [](double al) { return std::log(std::sqrt(al / (1 - al))); };
  const double h = lambda(a_prev) - lambda(a);  // +inf at the last step (a_prev = 1): mult1 = 0, mult2 = -1
  const auto x0 = std::sqrt(a) * x - std::sqrt(1 - a) * v;
  const double mult1 = std::sqrt((1 - a_prev) / (1 - a)) * std::exp(-h);
  const double mult2 = std::expm1(-2 * h) * std::sqrt(a_prev);
  const double mult_noise = std::sqrt(1 - a_prev) * std::sqrt(1 - std::exp(-2 * h));

  at::Tensor denoised = x0;
  if (!first_order) {
    const double a_back = alpha_cumprod(timesteps_[size_t(i - 1)]);
    const double r = (lambda(a) - lambda(a_back)) / h;
    denoised = (1 + 1 / (2 * r)) * x0 - (1 / (2 * r)) * old_x0_;
  }
  // The reference draws once on a first-order step and twice (keeping the second) otherwise.
  // Drawn on the CPU while the device still works on this step's transformer call; handed over without
  // making the host wait (no synchronisation inside a step).
  at::Tensor z = compat::to_device_async(noise->step_noise(i, x.sizes().vec(), first_order ? 1 : 2), x.device())
                     .to(x.scalar_type());
  old_x0_ = x0;
  return mult1 * x - mult2 * denoised + mult_noise * z;
}

double guidance_at(double scale, bool dynamic, int64_t t, int n) {
  if (!dynamic) return scale;
  const double base = double(n - t) / n;
  return 1 + scale * ((1 - std::cos(M_PI * std::pow(base, 5.0))) / 2);
}

}  // namespace studio::sampling

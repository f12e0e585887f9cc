#include "sampling/unipc.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include <ATen/TensorOperators.h>
#include <ATen/ops/full.h>

namespace studio::sampling {

namespace {

// log(alpha) - log(sigma) of a flow sigma (alpha = 1 - sigma): +inf at sigma 0.
float lambda(float sigma) { return std::log(1.0f - sigma) - std::log(sigma); }

// The UniPC step's scalars from sigma s0 to sigma t (float32, as the reference's 0-dim tensors).
struct Span {
  float alpha_t, ratio, lambda_s0, h, hh, h_phi_1, b_h;
  Span(float s0, float t, bool bh1)
      : alpha_t(1.0f - t), ratio(t / s0), lambda_s0(lambda(s0)), h(lambda(t) - lambda_s0), hh(-h),
        h_phi_1(std::expm1(hh)), b_h(bh1 ? hh : std::expm1(hh)) {}
  // x's share of the first-order update: sigma_t / sigma_s0 * x - alpha_t * (e^-h - 1) * m0.
  at::Tensor first_order(const at::Tensor& x, const at::Tensor& m0) const {
    return ratio * x - (alpha_t * h_phi_1) * m0;
  }
};

// R rhos = b for the 2x2 R = [[1, 1], [rk, 1]]: LU with partial pivoting, as LAPACK's sgesv.
std::pair<float, float> solve2(float rk, float b0, float b1) {
  float a00 = 1, a01 = 1, a10 = rk, a11 = 1;
  if (std::abs(rk) > 1) std::swap(a00, a10), std::swap(a01, a11), std::swap(b0, b1);
  const float l = a10 * (1.0f / a00), u11 = a11 - l * a01;
  const float y1 = b1 - l * b0;
  const float x1 = y1 / u11;
  return {(b0 - x1 * a01) / a00, x1};
}

}  // namespace

UniPC::UniPC(const plan::UniPCConfig& cfg, int steps) : cfg_(cfg) {
  if (steps < 1) throw std::invalid_argument("UniPC needs at least one step, got " + std::to_string(steps));
  // np.linspace(1, 1/train, steps + 1) in float64 (the last value exactly the end), 1 - that, shifted, reversed;
  // the last (sigma 0) dropped for the final 0.
  const int train = cfg.num_train_timesteps;
  const double end = 1.0 / train, delta = (end - 1.0) / steps, shift = cfg.flow_shift;
  for (int j = 0; j < steps; ++j) {
    const int k = steps - j;
    const double s = 1.0 - (k == steps ? end : 1.0 + k * delta);
    const double shifted = shift * s / (1.0 + (shift - 1.0) * s);
    sigmas_.push_back(float(shifted));
    timesteps_.push_back(int64_t(shifted * train));  // numpy's astype(int64) truncates
  }
  sigmas_.push_back(0.0f);
}

at::Tensor UniPC::model_timestep(int i, int64_t batch, const at::Device& device) const {
  return at::full({batch}, double(timesteps_[size_t(i)]), at::TensorOptions(at::kFloat).device(device));
}

at::Tensor UniPC::predict(int i, const at::Tensor& x, int order) const {
  const Span s(sigmas_[size_t(i)], sigmas_[size_t(i) + 1], cfg_.bh1);
  const auto& m0 = x0_history_.back();
  auto x_t = s.first_order(x, m0);
  if (order == 2) {  // diffusers' simplified second order: rho 0.5
    const float rk = (lambda(sigmas_[size_t(i) - 1]) - s.lambda_s0) / s.h;
    const auto d1 = (x0_history_[x0_history_.size() - 2] - m0) / rk;
    x_t = x_t - (s.alpha_t * s.b_h) * (0.5f * d1);
  }
  return x_t;
}

at::Tensor UniPC::correct(int i, const at::Tensor& model_t, int order) const {
  const Span s(sigmas_[size_t(i) - 1], sigmas_[size_t(i)], cfg_.bh1);
  const auto& m0 = x0_history_.back();
  // b_k = h phi_k(h) k! / B(h), with phi_1 h = e^-h - 1 and phi_{k+1} = phi_k / -h - 1 / (k + 1)!.
  float b[2], h_phi_k = s.h_phi_1 / s.hh - 1.0f;
  int factorial = 1;
  for (int k = 1; k <= order; ++k) {
    b[k - 1] = h_phi_k * float(factorial) / s.b_h;
    factorial *= k + 1;
    h_phi_k = h_phi_k / s.hh - float(1.0 / factorial);
  }
  auto corrected = s.first_order(last_sample_, m0);
  const auto d1_t = model_t - m0;
  if (order == 1) return corrected - (s.alpha_t * s.b_h) * (0.5f * d1_t);
  const float rk = (lambda(sigmas_[size_t(i) - 2]) - s.lambda_s0) / s.h;
  const auto d1 = (x0_history_[x0_history_.size() - 2] - m0) / rk;
  const auto [rho0, rho1] = solve2(rk, b[0], b[1]);
  return corrected - (s.alpha_t * s.b_h) * (rho0 * d1 + rho1 * d1_t);
}

at::Tensor UniPC::step(int i, const at::Tensor& model_output, const at::Tensor& sample, NoiseSource*) {
  if (i != next_step_)
    throw std::logic_error("internal error: UniPC step " + std::to_string(i) + " after step " +
                           std::to_string(next_step_ - 1));
  auto x = sample.to(at::kFloat);
  const auto x0 = x - sigmas_[size_t(i)] * model_output.to(at::kFloat);  // flow prediction -> x0
  const bool disabled =
      std::find(cfg_.disable_corrector.begin(), cfg_.disable_corrector.end(), i - 1) != cfg_.disable_corrector.end();
  if (i > 0 && !disabled) x = correct(i, x0, this_order_);
  x0_history_.push_back(x0);
  if (int(x0_history_.size()) > cfg_.solver_order) x0_history_.erase(x0_history_.begin());
  // lower_order_final: never more than the steps left; and no more than the outputs kept so far.
  this_order_ = std::min({cfg_.solver_order, steps() - i, lower_order_nums_ + 1});
  last_sample_ = x;
  const auto next = predict(i, x, this_order_);
  lower_order_nums_ = std::min(lower_order_nums_ + 1, cfg_.solver_order);
  ++next_step_;
  return next;
}

}  // namespace studio::sampling

#include "cache/mag_cache.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/sqrt.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/sum.h>

#include <cmath>

namespace studio::cache {

bool MagCache::run_blocks(const models::DitModel& model, models::Tokens& x, const models::Conditioning& c,
                          const at::Tensor& rope_cos, const at::Tensor& rope_sin,
                          const models::AttentionFn& attention) {
  const int call = calls_++;
  bool full = true;
  if (call >= retained_ && call < int(ratios_.size()) && kept_latent().defined()) {
    running_ratio_ *= ratios_[size_t(call)];
    running_error_ += std::abs(1 - running_ratio_);
    full = !(running_error_ < threshold_ && skipped_in_a_row_ < kMaxSkips);
  }
  const double error = running_error_;
  if (full) {
    running_ratio_ = 1;
    running_error_ = 0;
    skipped_in_a_row_ = 0;
    run_rest(model, 0, x, c, rope_cos, rope_sin, attention);
  } else {
    ++skipped_in_a_row_;
    reuse(x);
  }
  return record(full, call >= retained_ ? error : kNone);
}

bool MagCalibration::run_blocks(const models::DitModel& model, models::Tokens& x, const models::Conditioning& c,
                                const at::Tensor& rope_cos, const at::Tensor& rope_sin,
                                const models::AttentionFn& attention) {
  run_rest(model, 0, x, c, rope_cos, rope_sin, attention);
  const auto norms = [](const at::Tensor& t) { return at::sqrt(at::sum(t.to(at::kDouble) * t.to(at::kDouble), -1)); };
  double ratio = kNone;
  if (previous_.defined()) {
    // The mean over every real latent token of the call (all ranks' rows), of the norms' ratio.
    const auto per_token = real_rows(norms(kept_latent())) / real_rows(norms(previous_));
    const auto sums = summed_over_call(
        at::stack({at::sum(per_token), at::sum(at::ones_like(per_token))}), true);
    ratio = sums[0].item<double>() / sums[1].item<double>();
  }
  previous_ = kept_latent();
  return record(true, ratio);
}

}  // namespace studio::cache

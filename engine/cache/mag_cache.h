// MagCache (Ma et al. 2025, github.com/Zehong-Ma/MagCache), for one call a step: after the retained first
// calls, each call multiplies the calibrated magnitude ratio of its step into a running ratio and adds
// |1 - running ratio| to a running error; while that error stays under the threshold and no more than K
// calls have been skipped in a row, the blocks are skipped and what they added at the last full call is
// reused; otherwise everything runs and the running values restart. The decision depends on the step
// alone (the ratios are measured beforehand), so every rank takes the same one by construction.
//
// MagCalibration is the measuring run: every block runs, and each call's ratio (the mean over the
// latent tokens of the norm of what the blocks added, over the last call's) is recorded as its change.
#pragma once
#include <vector>

#include "cache/step_cache.h"

namespace studio::cache {

class MagCache final : public StepCache {
 public:
  static constexpr int kMaxSkips = 2;             // MagCache's K
  static constexpr double kRetainedShare = 0.2;  // its retention ratio: the first fifth of the calls run

  // `ratios`: one for each call of the run (plan::mag_ratios_for).
  MagCache(double threshold, std::vector<double> ratios)
      : threshold_(threshold), ratios_(std::move(ratios)), retained_(int(double(ratios_.size()) * kRetainedShare)) {}
  const char* name() const override { return "MagCache"; }
  bool run_blocks(const models::DitModel& model, models::Tokens& x, const models::Conditioning& c,
                  const at::Tensor& rope_cos, const at::Tensor& rope_sin,
                  const models::AttentionFn& attention) override;

 private:
  double threshold_;
  std::vector<double> ratios_;
  int retained_, calls_ = 0, skipped_in_a_row_ = 0;
  double running_ratio_ = 1, running_error_ = 0;
};

class MagCalibration final : public StepCache {
 public:
  const char* name() const override { return "MagCache calibration"; }
  bool run_blocks(const models::DitModel& model, models::Tokens& x, const models::Conditioning& c,
                  const at::Tensor& rope_cos, const at::Tensor& rope_sin,
                  const models::AttentionFn& attention) override;

 private:
  at::Tensor previous_;  // what the blocks added at the last call
};

}  // namespace studio::cache

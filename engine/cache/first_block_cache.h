// First-Block Cache, with diffusers 0.35.2's semantics (hooks/first_block_cache.py, after ParaAttention):
// per call the first block always runs, and r = its latent output minus its latent input. With r_prev kept
// from the last call that ran every block, when mean|r - r_prev| / mean|r_prev| <= threshold the other
// blocks are skipped: what they added last time (to the latent and to the text rows) is added to the
// first block's output, and r_prev stays. Otherwise every block runs, and r_prev and what they added are
// replaced. The first call runs everything.
//
// Under sequence, CFG and data parallelism each process holds part of a call's rows: the two sums of the
// ratio are summed over every process of the call (CallShare) before it is compared, so each rank takes
// the one-process decision and all take the same one.
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include <ATen/core/Tensor.h>

#include "models/dit_model.h"

namespace studio::cache {

// This process's part of a call: how many of its latent rows are real (the rest padding; -1: all of
// them), and how to sum a small tensor over every process that holds part of the call (in one process:
// unset, the tensor as it is).
struct CallShare {
  int64_t real_latent_rows = -1;
  std::function<at::Tensor(const at::Tensor&)> sum_over_call;
};

class FirstBlockCache : public models::BlockCache {
 public:
  static constexpr double kDefaultThreshold = 0.05;  // diffusers' FirstBlockCacheConfig default

  explicit FirstBlockCache(double threshold) : threshold_(threshold) {}
  // Before each call where the share can change (the sequence layout is known at call time).
  void set_share(CallShare share) { share_ = std::move(share); }

  bool run_blocks(const models::DitModel& model, models::Tokens& x, const models::Conditioning& c,
                  const at::Tensor& rope_cos, const at::Tensor& rope_sin,
                  const models::AttentionFn& attention) override;

  // For each call so far: whether every block ran, and the change it was decided on (NaN for the first).
  const std::vector<bool>& full_calls() const { return full_calls_; }
  const std::vector<double>& changes() const { return changes_; }

 private:
  // mean|r - r_prev| / mean|r_prev| over the call's real latent rows, on every process of the call.
  double change(const at::Tensor& r) const;

  double threshold_;
  CallShare share_;
  at::Tensor r_prev_, rest_latent_, rest_text_;
  std::vector<bool> full_calls_;
  std::vector<double> changes_;
};

}  // namespace studio::cache

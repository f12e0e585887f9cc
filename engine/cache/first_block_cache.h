// First-Block Cache, with diffusers 0.35.2's semantics (hooks/first_block_cache.py, after ParaAttention):
// per call the first block always runs, and r = its latent output minus its latent input. With r_prev kept
// from the last call that ran every block, when mean|r - r_prev| / mean|r_prev| <= threshold the other
// blocks are skipped: what they added last time (to the latent and to the text rows) is added to the
// first block's output, and r_prev stays. Otherwise every block runs, and r_prev and what they added are
// replaced. The first call runs everything.
#pragma once
#include "cache/step_cache.h"

namespace studio::cache {

class FirstBlockCache final : public StepCache {
 public:
  explicit FirstBlockCache(double threshold) : threshold_(threshold) {}
  const char* name() const override { return "First-Block Cache"; }
  bool run_blocks(const models::DitModel& model, models::Tokens& x, const models::Conditioning& c,
                  const at::Tensor& rope_cos, const at::Tensor& rope_sin,
                  const models::AttentionFn& attention) override;

 private:
  double threshold_;
  at::Tensor r_prev_;
};

}  // namespace studio::cache

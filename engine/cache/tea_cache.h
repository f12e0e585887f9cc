// TeaCache (Liu et al., "Timestep Embedding Tells: It's Time to Cache for Video Diffusion Model", 2024;
// github.com/ali-vilab/TeaCache, TeaCache4CogVideoX1.5 and TeaCache4FLUX): per call, the relative L1
// change of the family's modulated input since the last call (the model's teacache_indicator: CogVideoX's
// timestep embedding, FLUX.1's first block's modulated latent input), rescaled by the model's published
// polynomial, is accumulated; while the sum stays under the threshold the blocks are skipped and what
// they added at the last full call is added to their input; when it reaches the threshold every block
// runs and the sum restarts. The first and the last step always run. A threshold of 0 runs every step
// (the published polynomials can go negative, which would skip even then).
#pragma once
#include <vector>

#include "cache/step_cache.h"

namespace studio::cache {

class TeaCache final : public StepCache {
 public:
  // `coefficients`: highest power first (as numpy's poly1d); `steps`: the calls of the run (one a step).
  TeaCache(double threshold, std::vector<double> coefficients, int steps)
      : threshold_(threshold), coefficients_(std::move(coefficients)), steps_(steps) {}
  const char* name() const override { return "TeaCache"; }
  bool run_blocks(const models::DitModel& model, models::Tokens& x, const models::Conditioning& c,
                  const at::Tensor& rope_cos, const at::Tensor& rope_sin,
                  const models::AttentionFn& attention) override;

 private:
  double rescaled(double change) const;
  double threshold_;
  std::vector<double> coefficients_;
  int steps_, calls_ = 0;
  double accumulated_ = 0;
  at::Tensor previous_;
};

}  // namespace studio::cache

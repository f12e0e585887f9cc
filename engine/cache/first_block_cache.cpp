#include "cache/first_block_cache.h"

#include <ATen/TensorOperators.h>

namespace studio::cache {

bool FirstBlockCache::run_blocks(const models::DitModel& model, models::Tokens& x, const models::Conditioning& c,
                                 const at::Tensor& rope_cos, const at::Tensor& rope_sin,
                                 const models::AttentionFn& attention) {
  const at::Tensor before = x.latent;  // run_block makes new tensors: `before` stays the input
  model.run_block(0, x, c, rope_cos, rope_sin, attention);
  const at::Tensor r = x.latent - before;
  const double change = r_prev_.defined() ? relative_change(r, r_prev_, true) : kNone;
  // As diffusers: everything runs only when the change is above the threshold (a 0/0 change skips too).
  if (r_prev_.defined() && !(change > threshold_)) {
    reuse(x);
    return record(false, change);
  }
  run_rest(model, 1, x, c, rope_cos, rope_sin, attention);
  r_prev_ = r;
  return record(true, change);
}

}  // namespace studio::cache

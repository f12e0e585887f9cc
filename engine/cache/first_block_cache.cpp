#include "cache/first_block_cache.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/sum.h>

namespace studio::cache {

double FirstBlockCache::change(const at::Tensor& r) const {
  const auto real = [&](const at::Tensor& t) {
    return share_.real_latent_rows < 0 ? t : t.narrow(1, 0, share_.real_latent_rows);
  };
  // Sums rather than means: both count the same elements. In float64, so that the order in which the
  // ranks' parts are added moves the ratio by rounding only.
  auto sums = at::stack({at::sum(at::abs(real(r) - real(r_prev_)), at::kDouble),
                         at::sum(at::abs(real(r_prev_)), at::kDouble)});
  if (share_.sum_over_call) sums = share_.sum_over_call(sums);
  const auto host = sums.cpu();
  return host[0].item<double>() / host[1].item<double>();
}

bool FirstBlockCache::run_blocks(const models::DitModel& model, models::Tokens& x, const models::Conditioning& c,
                                 const at::Tensor& rope_cos, const at::Tensor& rope_sin,
                                 const models::AttentionFn& attention) {
  const at::Tensor before = x.latent;  // run_block makes new tensors: `before` stays the input
  model.run_block(0, x, c, rope_cos, rope_sin, attention);
  const at::Tensor r = x.latent - before;
  changes_.push_back(r_prev_.defined() ? change(r) : std::numeric_limits<double>::quiet_NaN());
  // As diffusers: everything runs only when the change is above the threshold (a 0/0 change skips too).
  if (r_prev_.defined() && !(changes_.back() > threshold_)) {
    x.latent = x.latent + rest_latent_;
    x.text = x.text + rest_text_;
    full_calls_.push_back(false);
    return false;
  }
  const models::Tokens head = x;
  for (size_t i = 1; i < model.num_blocks(); ++i) model.run_block(i, x, c, rope_cos, rope_sin, attention);
  rest_latent_ = x.latent - head.latent;
  rest_text_ = x.text - head.text;
  r_prev_ = r;
  full_calls_.push_back(true);
  return true;
}

}  // namespace studio::cache

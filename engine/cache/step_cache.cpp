#include "cache/step_cache.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/sum.h>

#include "cache/first_block_cache.h"
#include "cache/tea_cache.h"
#include "plan/family.h"

namespace studio::cache {

double StepCache::relative_change(const at::Tensor& now, const at::Tensor& prev, bool latent_rows) const {
  const auto real = [&](const at::Tensor& t) {
    return latent_rows && share_.real_latent_rows >= 0 ? t.narrow(1, 0, share_.real_latent_rows) : t;
  };
  // Sums rather than means: both count the same elements. In float64, so that the order in which the
  // ranks' parts are added moves the ratio by rounding only.
  auto sums = at::stack({at::sum(at::abs(real(now) - real(prev)), at::kDouble), at::sum(at::abs(real(prev)), at::kDouble)});
  if (share_.sum_over_call) sums = share_.sum_over_call(sums, latent_rows);
  const auto host = sums.cpu();
  return host[0].item<double>() / host[1].item<double>();
}

void StepCache::run_rest(const models::DitModel& model, size_t first, models::Tokens& x, const models::Conditioning& c,
                         const at::Tensor& rope_cos, const at::Tensor& rope_sin, const models::AttentionFn& attention) {
  const models::Tokens before = x;  // run_block makes new tensors: `before` stays as it is
  for (size_t i = first; i < model.num_blocks(); ++i) model.run_block(i, x, c, rope_cos, rope_sin, attention);
  rest_latent_ = x.latent - before.latent;
  rest_text_ = x.text - before.text;
}

void StepCache::reuse(models::Tokens& x) const {
  x.latent = x.latent + rest_latent_;
  x.text = x.text + rest_text_;
}

bool StepCache::record(bool full, double change) {
  full_calls_.push_back(full);
  changes_.push_back(change);
  return full;
}

std::unique_ptr<StepCache> make_step_cache(const plan::JobSpec& job, const plan::ModelFolder& model) {
  const double threshold = plan::cache_threshold(job, model);
  if (job.use_fbcache) return std::make_unique<FirstBlockCache>(threshold);
  if (job.use_teacache)
    return std::make_unique<TeaCache>(threshold, plan::rules_of(model).teacache_coefficients(model),
                                      job.num_inference_steps);
  return nullptr;
}

}  // namespace studio::cache

#include "cache/step_cache.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/sum.h>

#include "cache/first_block_cache.h"
#include "cache/mag_cache.h"
#include "cache/tea_cache.h"
#include "plan/family.h"
#include "plan/mag_ratios.h"

namespace studio::cache {

at::Tensor StepCache::real_rows(const at::Tensor& t) const {
  return share_.real_latent_rows >= 0 ? t.narrow(1, 0, share_.real_latent_rows) : t;
}

at::Tensor StepCache::summed_over_call(const at::Tensor& sums, bool over_sequence) const {
  return (share_.sum_over_call ? share_.sum_over_call(sums, over_sequence) : sums).cpu();
}

double StepCache::relative_change(const at::Tensor& now, const at::Tensor& prev, bool latent_rows) const {
  const auto real = [&](const at::Tensor& t) { return latent_rows ? real_rows(t) : t; };
  // Sums rather than means: both count the same elements. In float64, so that the order in which the
  // ranks' parts are added moves the ratio by rounding only.
  const auto sums = summed_over_call(at::stack({at::sum(at::abs(real(now) - real(prev)), at::kDouble),
                                                at::sum(at::abs(real(prev)), at::kDouble)}),
                                     latent_rows);
  return sums[0].item<double>() / sums[1].item<double>();
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

namespace {

std::unique_ptr<StepCache> make_step_cache(const plan::JobSpec& job, const plan::ModelFolder& model) {
  const double threshold = plan::cache_threshold(job, model);
  if (job.use_fbcache) return std::make_unique<FirstBlockCache>(threshold);
  if (job.use_teacache)
    return std::make_unique<TeaCache>(threshold, plan::rules_of(model).teacache_coefficients(model),
                                      job.num_inference_steps);
  if (job.use_magcache)
    return std::make_unique<MagCache>(
        threshold, plan::mag_ratios_for(plan::read_mag_ratios(job.magcache_ratios), job.num_inference_steps));
  return nullptr;
}

}  // namespace

StepCaches make_step_caches(const plan::JobSpec& job, const plan::ModelFolder& model) {
  StepCaches caches;
  // The calibration run skips nothing: one context measures the whole batch, one ratio a step.
  if (!job.magcache_calibrate.empty()) {
    caches.push_back(std::make_unique<MagCalibration>());
    return caches;
  }
  if (auto cache = make_step_cache(job, model)) {
    // Without guidance above 1 the reference makes one call a step, for the conditional branch alone.
    const bool per_branch = plan::rules_of(model).calls_per_guidance_branch() && job.guidance_scale > 1;
    caches.push_back(std::move(cache));
    if (per_branch) caches.push_back(make_step_cache(job, model));
  }
  return caches;
}

}  // namespace studio::cache

#include "cache/tea_cache.h"

namespace studio::cache {

double TeaCache::rescaled(double change) const {
  double y = 0;
  for (double a : coefficients_) y = y * change + a;  // Horner's rule, as poly1d evaluates
  return y;
}

bool TeaCache::run_blocks(const models::DitModel& model, models::Tokens& x, const models::Conditioning& c,
                          const at::Tensor& rope_cos, const at::Tensor& rope_sin,
                          const models::AttentionFn& attention) {
  const int call = calls_++;
  const auto indicator = model.teacache_indicator(x, c);
  const double change =
      previous_.defined() ? relative_change(indicator.values, previous_, indicator.latent_rows) : kNone;
  previous_ = indicator.values;
  bool full = true;
  if (call == 0 || call >= steps_ - 1 || threshold_ == 0) {
    accumulated_ = 0;
  } else {
    accumulated_ += rescaled(change);
    full = !(accumulated_ < threshold_);
    if (full) accumulated_ = 0;
  }
  if (full) run_rest(model, 0, x, c, rope_cos, rope_sin, attention);
  else reuse(x);
  return record(full, change);
}

}  // namespace studio::cache

#include "parallel/attention.h"

#include <cmath>
#include <limits>
#include <vector>

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/isinf.h>
#include <ATen/ops/logsumexp.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/where.h>

namespace studio::parallel {

Partial attend_block(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& key_valid) {
  const double scale = 1.0 / std::sqrt(double(q.size(-1)));
  const auto kt = k.to(at::kFloat).transpose(-2, -1);
  const auto vf = v.to(at::kFloat);
  // Blocks of queries keep the score matrix of a long sequence bounded (~256 MB of float32).
  const int64_t per_query = q.size(0) * q.size(1) * k.size(2);
  const int64_t block = std::max<int64_t>(1, (int64_t(64) << 20) / std::max<int64_t>(per_query, 1));
  std::vector<at::Tensor> outs, lses;
  for (int64_t s = 0; s < q.size(2); s += block) {
    auto scores = at::matmul(q.narrow(2, s, std::min(block, q.size(2) - s)).to(at::kFloat), kt) * scale;
    if (key_valid.defined()) scores.masked_fill_(key_valid.logical_not(), -std::numeric_limits<float>::infinity());
    auto lse = at::logsumexp(scores, {-1}, true);
    // exp(-inf - -inf) would be NaN for a query with no valid key here: its weights are 0.
    auto safe = at::where(at::isinf(lse), at::zeros_like(lse), lse);
    outs.push_back(at::matmul(at::exp(scores - safe), vf));
    lses.push_back(lse);
  }
  return {at::cat(outs, 2), at::cat(lses, 2)};
}

void merge(Partial& acc, const Partial& next) {
  if (!acc.out.defined()) {
    acc = next;
    return;
  }
  const auto m = at::maximum(acc.lse, next.lse);
  const auto safe_m = at::where(at::isinf(m), at::zeros_like(m), m);
  const auto wa = at::exp(acc.lse - safe_m), wb = at::exp(next.lse - safe_m);
  const auto total = wa + wb;
  const auto denom = at::where(total > 0, total, at::ones_like(total));
  acc.out = (acc.out * wa + next.out * wb) / denom;
  acc.lse = at::where(total > 0, safe_m + at::log(denom), m);
}

}  // namespace studio::parallel

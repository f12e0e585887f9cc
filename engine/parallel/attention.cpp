#include "parallel/attention.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/log_sigmoid.h>
#include <ATen/ops/sigmoid.h>

#include "compat/torch_compat.h"

namespace studio::parallel {

Partial attend_block(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  auto r = compat::attention_with_lse(q, k, v);
  return {r.out.to(at::kFloat), r.lse.unsqueeze(-1)};
}

void merge(Partial& acc, const Partial& next) {
  if (!acc.out.defined()) {
    acc = next;
    return;
  }
  // Weights exp(lse_a) and exp(lse_b) normalised: next's share is sigmoid(lse_b - lse_a). Two passes over
  // the output and no exp() of a large number.
  acc.out = acc.out - at::sigmoid(next.lse - acc.lse) * (acc.out - next.out);
  acc.lse = acc.lse - at::log_sigmoid(acc.lse - next.lse);
}

}  // namespace studio::parallel

#include "models/vae_decoder.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/full_like.h>
#include <ATen/ops/var_mean.h>

namespace studio::models {

std::pair<int64_t, int64_t> rows_of(int64_t h, int r, int n) {
  const int64_t base = h / n, extra = h % n;
  const int64_t begin = r * base + std::min<int64_t>(r, extra);
  return {begin, begin + base + (r < extra ? 1 : 0)};
}

std::pair<at::Tensor, at::Tensor> group_mean_var(const at::Tensor& x, RowExchange* rows) {
  const int64_t B = x.size(0), G = x.size(1);
  auto [var, mean] = at::var_mean(x.reshape({B, G, -1}).to(at::kFloat), {2}, /*unbiased=*/false, /*keepdim=*/true);
  if (!rows) return {mean, var};
  const double n = double(x.numel() / (B * G));
  const auto m = mean.to(at::kDouble), v = var.to(at::kDouble);
  const auto total = rows->sum(at::cat({at::full_like(m, n), m * n, (v + m * m) * n}, 2));  // [B, G, 3]
  const auto count = total.narrow(2, 0, 1), global_mean = total.narrow(2, 1, 1) / count;
  const auto global_var = total.narrow(2, 2, 1) / count - global_mean * global_mean;
  return {global_mean.to(at::kFloat), global_var.to(at::kFloat)};
}

}  // namespace studio::models

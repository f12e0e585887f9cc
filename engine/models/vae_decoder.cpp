#include "models/vae_decoder.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/full_like.h>
#include <ATen/ops/var_mean.h>

#include <string>

#include "plan/error.h"

namespace studio::models {

std::pair<int64_t, int64_t> rows_of(int64_t h, int r, int n) {
  const int64_t base = h / n, extra = h % n;
  const int64_t begin = r * base + std::min<int64_t>(r, extra);
  return {begin, begin + base + (r < extra ? 1 : 0)};
}

at::Tensor rows_of_share(const at::Tensor& pixels, int64_t dim, int64_t spatial, const RowShare& share) {
  const int64_t h = pixels.size(dim) / spatial;
  if (h < share.ranks)
    throw InputError("parallel VAE encoding: " + std::to_string(share.ranks) + " ranks cannot share " +
                     std::to_string(h) + " latent rows; use at most " + std::to_string(h) + " ranks");
  const auto [begin, end] = rows_of(h, share.rank, share.ranks);
  return pixels.narrow(dim, begin * spatial, (end - begin) * spatial);
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

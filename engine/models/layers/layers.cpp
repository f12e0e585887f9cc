#include "models/layers/layers.h"

#include <ATen/ops/gelu.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/rsqrt.h>
#include <ATen/ops/stack.h>
#include <ATen/TensorOperators.h>

namespace studio::models {

Linear Linear::load(const WeightSource& w, const std::string& prefix, int64_t in, int64_t out, bool bias) {
  Linear l;
  l.weight = w.take(prefix + ".weight", {out, in});
  if (bias) l.bias = w.take(prefix + ".bias", {out});
  return l;
}

at::Tensor Linear::operator()(const at::Tensor& x) const { return at::linear(x, weight, bias); }

LayerNorm LayerNorm::load(const WeightSource& w, const std::string& prefix, int64_t dim, double eps, bool affine) {
  LayerNorm n;
  n.dim = dim;
  n.eps = eps;
  if (affine) {
    n.weight = w.take(prefix + ".weight", {dim});
    n.bias = w.take(prefix + ".bias", {dim});
  }
  return n;
}

at::Tensor LayerNorm::operator()(const at::Tensor& x) const { return at::layer_norm(x, {dim}, weight, bias, eps); }

at::Tensor gelu_tanh_in_place(at::Tensor hidden) {
  at::gelu_out(hidden, hidden, "tanh");
  return hidden;
}

at::Tensor apply_rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  auto pairs = x.unflatten(-1, {x.size(-1) / 2, 2});
  auto rotated = at::stack({-pairs.select(-1, 1), pairs.select(-1, 0)}, -1).flatten(-2);
  return (x.to(at::kFloat) * cos + rotated.to(at::kFloat) * sin).to(x.scalar_type());
}

RmsNorm RmsNorm::load(const WeightSource& w, const std::string& prefix, int64_t dim, double eps) {
  return {w.take(prefix + ".weight", {dim}), eps};
}

at::Tensor RmsNorm::operator()(const at::Tensor& x) const {
  const auto f = x.to(at::kFloat);
  return (f * at::rsqrt(f.pow(2).mean(-1, true) + eps)).to(weight.scalar_type()) * weight;
}

}  // namespace studio::models

#include "models/layers/layers.h"

#include <ATen/ops/cat.h>
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
  auto taken = w.weights.take_linear(prefix + ".weight", {out, in}, w.dtype, w.device);
  l.weight = taken.dense;
  l.packed = taken.packed;
  l.dtype = w.dtype;
  if (bias) l.bias = w.take(prefix + ".bias", {out});
  return l;
}

at::Tensor Linear::operator()(const at::Tensor& x) const {
  return at::linear(x, packed.defined() ? packed.dequantize(dtype) : weight, bias);
}

Linear fuse_outputs(const std::vector<Linear>& parts) {
  Linear fused = parts.at(0);
  std::vector<at::Tensor> weights, biases;
  std::vector<io::PackedWeight> packed;
  for (const auto& p : parts) {
    (p.packed.defined() ? packed.push_back(p.packed) : weights.push_back(p.weight));
    if (p.bias.defined()) biases.push_back(p.bias);
  }
  if (!packed.empty() && !weights.empty())  // some parts stored quantized, some not: all dense then
    for (const auto& p : packed) weights.push_back(p.dequantize(fused.dtype));
  if (weights.empty()) {
    fused.packed = io::cat_rows(packed);
  } else {
    fused.packed = {};
    fused.weight = at::cat(weights, 0);
  }
  if (!biases.empty()) fused.bias = at::cat(biases, 0);
  return fused;
}

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

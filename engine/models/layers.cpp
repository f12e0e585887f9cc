#include "models/layers.h"

#include <ATen/ops/layer_norm.h>
#include <ATen/ops/linear.h>

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

}  // namespace studio::models

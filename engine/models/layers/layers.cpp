#include "models/layers/layers.h"

#include <algorithm>
#include <cstdint>

#include <ATen/ops/cat.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/rsqrt.h>
#include <ATen/ops/stack.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/empty.h>
#ifdef STUDIO_WITH_CUDA_KERNELS
#include <c10/cuda/CUDAStream.h>

#include "kernels/layer_norm.h"
#endif

namespace studio::models {

Linear Linear::load(const WeightSource& w, const std::string& prefix, int64_t in, int64_t out, bool bias) {
  Linear l;
  auto taken = w.weights.take_linear(prefix + ".weight", {out, in}, w.dtype, w.device);
  l.weight = taken.dense;
  l.packed = taken.packed;
  l.dtype = w.dtype;
  if (bias) l.bias = w.take(prefix + ".bias", {out});
  if (w.weights.gemm_in_fp8() && in % 16 == 0 && out % 16 == 0) {
    l.fp8 = compat::quantize_fp8_rows(l.packed.defined() ? l.packed.dequantize(at::kFloat) : l.weight);
    l.weight = at::Tensor(), l.packed = {};
  }
  return l;
}

at::Tensor Linear::operator()(const at::Tensor& x) const {
  if (fp8.defined()) return compat::fp8_linear(x, fp8, bias, dtype);
  return at::linear(x, packed.defined() ? packed.dequantize(dtype) : weight, bias);
}

Linear fuse_outputs(const std::vector<Linear>& parts) {
  Linear fused = parts.at(0);
  fused.weight = at::Tensor(), fused.packed = {}, fused.fp8 = {}, fused.bias = at::Tensor();
  std::vector<at::Tensor> biases;
  for (const auto& p : parts)
    if (p.bias.defined()) biases.push_back(p.bias);
  if (!biases.empty()) fused.bias = at::cat(biases, 0);
  const auto all = [&](auto kept) { return std::all_of(parts.begin(), parts.end(), kept); };
  if (all([](const Linear& p) { return p.fp8.defined(); })) {  // each part's rows keep their scales
    std::vector<at::Tensor> values, scales;
    for (const auto& p : parts) values.push_back(p.fp8.values), scales.push_back(p.fp8.scales);
    fused.fp8 = {at::cat(values, 0), at::cat(scales, 0)};
  } else if (all([](const Linear& p) { return p.packed.defined(); })) {
    std::vector<io::PackedWeight> packed;
    for (const auto& p : parts) packed.push_back(p.packed);
    fused.packed = io::cat_rows(packed);
  } else {  // kept in different ways: all dense, in order
    std::vector<at::Tensor> weights;
    for (const auto& p : parts)
      weights.push_back(p.fp8.defined()      ? (p.fp8.values.to(at::kFloat) * p.fp8.scales.unsqueeze(1)).to(fused.dtype)
                        : p.packed.defined() ? p.packed.dequantize(fused.dtype)
                                             : p.weight);
    fused.weight = at::cat(weights, 0);
  }
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

namespace {

// A CUDA bfloat16 norm over a head's width (64 to 256 values, a multiple of 64; CogVideoX's q and k norms): our
// kernel, one warp a row, reading the strided view in place (kernels/layer_norm.h). Undefined where it does not
// apply, and then ATen's kernel runs.
at::Tensor short_row_layer_norm(const at::Tensor& x, const LayerNorm& n) {
#ifdef STUDIO_WITH_CUDA_KERNELS
  const bool affine_ok = (!n.weight.defined() || (n.weight.scalar_type() == at::kBFloat16 && n.weight.is_contiguous())) &&
                         (!n.bias.defined() || (n.bias.scalar_type() == at::kBFloat16 && n.bias.is_contiguous()));
  if (!x.is_cuda() || x.scalar_type() != at::kBFloat16 || n.dim % 64 != 0 || n.dim > 256 || x.dim() > 4 ||
      x.size(-1) != n.dim || x.stride(-1) != 1 || !affine_ok || reinterpret_cast<uintptr_t>(x.data_ptr()) % 4 != 0)
    return {};
  int64_t size[3] = {1, 1, 1}, stride[3] = {0, 0, 0};
  for (int64_t i = 0, lead = x.dim() - 1; i < lead; ++i) {
    size[3 - lead + i] = x.size(i), stride[3 - lead + i] = x.stride(i);
    if (x.stride(i) % 2 != 0) return {};  // rows read two values at a time
  }
  auto y = at::empty(x.sizes(), x.options());
  kernels::layer_norm_short_rows(x.data_ptr(), size[0], size[1], size[2], stride[0], stride[1], stride[2], int(n.dim),
                                 n.weight.defined() ? n.weight.data_ptr() : nullptr,
                                 n.bias.defined() ? n.bias.data_ptr() : nullptr, float(n.eps), y.data_ptr(),
                                 c10::cuda::getCurrentCUDAStream().stream());
  return y;
#else
  (void)x, (void)n;
  return {};
#endif
}

}  // namespace

at::Tensor LayerNorm::operator()(const at::Tensor& x) const {
  if (auto y = short_row_layer_norm(x, *this); y.defined()) return y;
  return at::layer_norm(x, {dim}, weight, bias, eps);
}

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

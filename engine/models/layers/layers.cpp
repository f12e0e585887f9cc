#include "models/layers/layers.h"

#include <algorithm>
#include <cstdint>

#include <ATen/ops/_addmm_activation.h>
#include <ATen/ops/addcmul.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/rsqrt.h>
#include <ATen/ops/stack.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/empty.h>

#include "plan/model_folder.h"
#ifdef STUDIO_WITH_CUDA_KERNELS
#include <c10/cuda/CUDAStream.h>

#include "kernels/head_rows.h"
#include "kernels/modulated_norm.h"
#endif

namespace studio::models {

namespace {

// GELU's tanh approximation written over a linear layer's fresh output: the hidden values are held once.
at::Tensor gelu_tanh_in_place(at::Tensor hidden) {
  at::gelu_out(hidden, hidden, "tanh");
  return hidden;
}

}  // namespace

Linear Linear::load(const WeightSource& w, const std::string& prefix, int64_t in, int64_t out, bool bias) {
  Linear l;
  auto taken = w.weights.take_linear(prefix + ".weight", {out, in}, w.dtype, w.device);
  l.weight = taken.dense;
  l.packed = taken.packed;
  l.dtype = w.dtype;
  for (const auto& d : taken.beside)
    l.adapters.push_back({d.down.defined() ? d.down.to(w.device, w.dtype) : at::Tensor(), d.up.to(w.device, w.dtype),
                          d.scale, 0, d.strength});
  if (bias) l.bias = w.take(prefix + ".bias", {out});
  // Not in a dry load (the meta device: names and shapes are what it checks, and rounding has no values to round).
  if (w.weights.gemm_in_fp8() && !w.device.is_meta() && in % 16 == 0 && out % 16 == 0) {
    l.fp8 = compat::quantize_fp8_rows(l.packed.defined() ? l.packed.dequantize(at::kFloat) : l.weight);
    l.weight = at::Tensor(), l.packed = {};
  }
  return l;
}

at::Tensor Linear::operator()(const at::Tensor& x) const {
  auto y = fp8.defined() ? compat::fp8_linear(x, fp8, bias, dtype)
                         : at::linear(x, packed.defined() ? packed.dequantize_for_call(dtype) : weight, bias);
  for (const auto& a : adapters)
    y.narrow(-1, a.first_row, a.up.size(0))
        .add_(at::linear(a.down.defined() ? at::linear(x, a.down) : x, a.up),
              plan::times_strength(a.scale, a.strength.get()));
  return y;
}

at::Tensor Linear::gelu_tanh(const at::Tensor& x) const {
  if (!x.is_cuda() || !weight.defined() || !bias.defined() || !adapters.empty() || x.scalar_type() != weight.scalar_type())
    return gelu_tanh_in_place((*this)(x));
  auto shape = x.sizes().vec();
  shape.back() = weight.size(0);
  return at::_addmm_activation(bias, x.reshape({-1, x.size(-1)}), weight.t(), 1, 1, /*use_gelu=*/true).view(shape);
}

Linear fuse_outputs(const std::vector<Linear>& parts) {
  Linear fused = parts.at(0);
  fused.weight = at::Tensor(), fused.packed = {}, fused.fp8 = {}, fused.bias = at::Tensor();
  std::vector<at::Tensor> biases;
  fused.adapters.clear();
  int64_t first_row = 0;
  for (const auto& p : parts) {
    if (p.bias.defined()) biases.push_back(p.bias);
    for (auto a : p.adapters) a.first_row += first_row, fused.adapters.push_back(a);
    first_row += p.fp8.defined() ? p.fp8.values.size(0) : p.packed.defined() ? p.packed.shape[0] : p.weight.size(0);
  }
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

// x [B, heads, S, hd] (any strides) after ATen's norm: the rotation alone.
at::Tensor rotate_with_aten(const at::Tensor& x, const Rotation& r) {
  if (!r.cos.defined()) return x;
  const auto rows = x.narrow(2, r.from, x.size(2) - r.from);
  const auto pairs = rows.unflatten(-1, {rows.size(-1) / 2, 2});
  const auto turned = at::stack({-pairs.select(-1, 1), pairs.select(-1, 0)}, -1).flatten(-2);
  auto y = (rows.to(at::kFloat) * r.cos + turned.to(at::kFloat) * r.sin).to(x.scalar_type());
  return r.from == 0 ? y : at::cat({x.narrow(2, 0, r.from), y}, 2);
}

enum class NormKind { None, Layer, Rms };

// The norm and the rotation as one CUDA kernel (kernels/head_rows.h) over bfloat16 rows of 64, 128 or 256 values
// in [B, heads, S, hd] or fewer leading dims. Undefined where it does not apply; then ATen's ops run.
at::Tensor head_rows_on_gpu(const at::Tensor& x, NormKind kind, const at::Tensor& weight, const at::Tensor& bias,
                            double eps, const Rotation& r) {
#ifdef STUDIO_WITH_CUDA_KERNELS
  const auto bf16_vector = [&](const at::Tensor& t) {
    return !t.defined() || (t.scalar_type() == at::kBFloat16 && t.is_contiguous() && t.dim() == 1 && t.size(0) == x.size(-1));
  };
  const auto table = [&](const at::Tensor& t) {
    return t.is_cuda() && t.scalar_type() == at::kFloat && t.is_contiguous() && t.dim() == 2 &&
           t.size(0) == x.size(-2) - r.from && t.size(1) == x.size(-1);
  };
  const int64_t d = x.dim() ? x.size(-1) : 0;
  if (!x.is_cuda() || x.scalar_type() != at::kBFloat16 || x.dim() < 2 || x.dim() > 4 || (d != 64 && d != 128 && d != 256) ||
      x.stride(-1) != 1 || !bf16_vector(weight) || !bf16_vector(bias) ||
      reinterpret_cast<uintptr_t>(x.data_ptr()) % 16 != 0 || (r.cos.defined() && (!table(r.cos) || !table(r.sin))))
    return {};
  kernels::HeadRows in;
  int64_t* size[3] = {&in.n0, &in.n1, &in.n2};
  int64_t* stride[3] = {&in.s0, &in.s1, &in.s2};
  for (int64_t i = 0, lead = x.dim() - 1; i < lead; ++i) {
    *size[3 - lead + i] = x.size(i), *stride[3 - lead + i] = x.stride(i);
    if (x.stride(i) % 8 != 0) return {};  // rows read eight values (16 bytes) at a time
  }
  in.x = x.data_ptr(), in.dim = int(d), in.eps = float(eps);
  in.norm = kind == NormKind::Layer ? kernels::HeadNorm::Layer : kind == NormKind::Rms ? kernels::HeadNorm::Rms
                                                                                      : kernels::HeadNorm::None;
  in.weight = weight.defined() ? weight.data_ptr() : nullptr;
  in.bias = bias.defined() ? bias.data_ptr() : nullptr;
  if (r.cos.defined()) in.cos = r.cos.data_ptr<float>(), in.sin = r.sin.data_ptr<float>(), in.rope_from = r.from;
  // [B, heads, S, hd] is written as a view of [B, S, heads, hd], the layout the attention kernels take as theirs
  // (diffusers' too) and give their output in: the output's transpose back to [B, S, width] is then free.
  const auto y = x.dim() == 4 ? at::empty({x.size(0), x.size(2), x.size(1), d}, x.options()).transpose(1, 2)
                              : at::empty(x.sizes(), x.options());
  kernels::HeadRowsOut out{y.data_ptr()};
  int64_t* out_stride[3] = {&out.o0, &out.o1, &out.o2};
  for (int64_t i = 0, lead = x.dim() - 1; i < lead; ++i) *out_stride[3 - lead + i] = y.stride(i);
  kernels::head_rows(in, out, c10::cuda::getCurrentCUDAStream().stream());
  return y;
#else
  (void)x, (void)kind, (void)weight, (void)bias, (void)eps, (void)r;
  return {};
#endif
}

}  // namespace

at::Tensor rotate(const at::Tensor& x, const Rotation& r) {
  if (!r.cos.defined()) return x;
  if (auto y = head_rows_on_gpu(x, NormKind::None, {}, {}, 0.0, r); y.defined()) return y;
  return rotate_with_aten(x, r);
}

at::Tensor LayerNorm::operator()(const at::Tensor& x, const Rotation& r) const {
  if (x.dim() && x.size(-1) == dim)
    if (auto y = head_rows_on_gpu(x, NormKind::Layer, weight, bias, eps, r); y.defined()) return y;
  return rotate_with_aten(at::layer_norm(x, {dim}, weight, bias, eps), r);
}

void LayerNorm::modulate_into(const at::Tensor& out, const at::Tensor& x, const at::Tensor& shift,
                              const at::Tensor& scale) const {
#ifdef STUDIO_WITH_CUDA_KERNELS
  const auto rows = [&](const at::Tensor& t) {  // [B, n, dim] bfloat16 on the GPU, as the kernel reads them
    return t.is_cuda() && t.scalar_type() == at::kBFloat16 && t.dim() == 3 && t.size(2) == dim && t.stride(2) == 1 &&
           t.stride(0) % 8 == 0 && t.stride(1) % 8 == 0 && reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0;
  };
  const auto per_sample = [&](const at::Tensor& t) {
    return t.is_cuda() && t.scalar_type() == at::kBFloat16 && t.dim() == 3 && t.size(0) == x.size(0) &&
           t.size(1) == 1 && t.size(2) == dim && t.stride(2) == 1;
  };
  const auto vector = [&](const at::Tensor& t) {
    return !t.defined() || (t.scalar_type() == at::kBFloat16 && t.is_contiguous() && t.numel() == dim);
  };
  if (dim % 8 == 0 && dim <= 8192 && rows(x) && rows(out) && out.sizes() == x.sizes() && per_sample(shift) &&
      per_sample(scale) && vector(weight) && vector(bias)) {
    const auto scale1p = 1 + scale;  // rounded as ATen's path rounds it
    kernels::ModulatedNorm in;
    in.x = x.data_ptr(), in.samples = x.size(0), in.rows = x.size(1), in.x_sample_stride = x.stride(0);
    in.x_row_stride = x.stride(1), in.dim = int(dim), in.eps = float(eps);
    in.weight = weight.defined() ? weight.data_ptr() : nullptr;
    in.bias = bias.defined() ? bias.data_ptr() : nullptr;
    in.scale1p = scale1p.data_ptr(), in.scale_stride = scale1p.stride(0);
    in.shift = shift.data_ptr(), in.shift_stride = shift.stride(0);
    in.y = out.data_ptr(), in.y_sample_stride = out.stride(0), in.y_row_stride = out.stride(1);
    kernels::modulated_layer_norm(in, c10::cuda::getCurrentCUDAStream().stream());
    return;
  }
#endif
  at::addcmul_out(const_cast<at::Tensor&>(out), shift, (*this)(x), 1 + scale);
}


RmsNorm RmsNorm::load(const WeightSource& w, const std::string& prefix, int64_t dim, double eps) {
  return {w.take(prefix + ".weight", {dim}), eps};
}

at::Tensor RmsNorm::operator()(const at::Tensor& x, const Rotation& r) const {
  if (auto y = head_rows_on_gpu(x, NormKind::Rms, weight, {}, eps, r); y.defined()) return y;
  const auto f = x.to(at::kFloat);
  return rotate_with_aten((f * at::rsqrt(f.pow(2).mean(-1, true) + eps)).to(weight.scalar_type()) * weight, r);
}

}  // namespace studio::models

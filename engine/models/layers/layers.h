// The few layers the families are made of, as plain ATen calls over weights taken from a WeightSet.
#pragma once
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "compat/fp8_gemm.h"
#include "io/weights/weights.h"

namespace studio::models {

// Where weights come from and in which dtype and device they are wanted.
struct WeightSource {
  io::WeightSet& weights;
  at::ScalarType dtype;
  at::Device device;
  at::Tensor take(const std::string& name, const std::vector<int64_t>& shape, const std::string& note = "") const {
    return weights.take(name, shape, dtype, device, note);
  }
};

// y = x W^T + b. W is dense in the run's dtype, or packed (fp8, GGUF blocks) and dequantized into `dtype`
// for each call, so that a quantized model keeps its quantized size in memory, or, when the weights ask for
// float8 GEMMs (--fp8_gemm) and both widths are multiples of 16 (what the fp8 kernels take), float8 per channel.
struct Linear {
  at::Tensor weight, bias;  // weight undefined when packed or fp8; bias may be undefined
  io::PackedWeight packed;
  compat::Fp8Weight fp8;
  at::ScalarType dtype = at::kFloat;  // what the layer computes in
  static Linear load(const WeightSource& w, const std::string& prefix, int64_t in, int64_t out, bool bias = true);
  at::Tensor operator()(const at::Tensor& x) const;
};

// Layers with the same input as one, their outputs concatenated (one GEMM reads the input once).
Linear fuse_outputs(const std::vector<Linear>& parts);

struct LayerNorm {
  at::Tensor weight, bias;  // undefined without elementwise affine
  int64_t dim = 0;
  double eps = 1e-5;
  static LayerNorm load(const WeightSource& w, const std::string& prefix, int64_t dim, double eps, bool affine);
  at::Tensor operator()(const at::Tensor& x) const;
};

// The feed-forward's activation, GELU's tanh approximation, written over `hidden` (a linear layer's fresh
// output): the hidden values, 4x the width or more, are held once instead of twice.
at::Tensor gelu_tanh_in_place(at::Tensor hidden);

// x [B, H, N, hd] rotated by the tables cos, sin [N, hd] in interleaved pairs (2k, 2k + 1), in float32:
// x * cos + (-x_odd, x_even) * sin, as diffusers' apply_rotary_emb.
at::Tensor apply_rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

// Root-mean-square norm over the last dimension, computed in float32 (diffusers' RMSNorm), then scaled.
struct RmsNorm {
  at::Tensor weight;
  double eps = 1e-6;
  static RmsNorm load(const WeightSource& w, const std::string& prefix, int64_t dim, double eps);
  at::Tensor operator()(const at::Tensor& x) const;
};

// Every tensor the layers hold (weights, biases, packed bytes; undefined ones left out), in order: a block's
// tensors for DitModel::block_tensors.
inline void add_tensors(std::vector<at::Tensor>& out, const at::Tensor& t) {
  if (t.defined()) out.push_back(t);
}
inline void add_tensors(std::vector<at::Tensor>& out, const Linear& l) {
  add_tensors(out, l.weight), add_tensors(out, l.bias), add_tensors(out, l.packed.bytes);
  add_tensors(out, l.fp8.values), add_tensors(out, l.fp8.scales);
}
inline void add_tensors(std::vector<at::Tensor>& out, const LayerNorm& n) { add_tensors(out, n.weight), add_tensors(out, n.bias); }
inline void add_tensors(std::vector<at::Tensor>& out, const RmsNorm& n) { add_tensors(out, n.weight); }
template <class... Layers>
std::vector<at::Tensor> tensors_of(const Layers&... layers) {
  std::vector<at::Tensor> out;
  (add_tensors(out, layers), ...);
  return out;
}

}  // namespace studio::models

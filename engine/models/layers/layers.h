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
  // LoRAs added to the output beside the weight: on a packed weight (a merge would make it dense), or on any where
  // their strengths must stay changeable (plan::ModelFolder::loras_beside). Output rows
  // [first_row, first_row + rows of up) += scale * up (down x), or scale * up x without `down` (a .diff), in
  // `dtype`; times strength->value where the strength is live.
  struct Adapter {
    at::Tensor down, up;
    double scale = 1.0;
    int64_t first_row = 0;
    std::shared_ptr<const plan::LiveStrength> strength;
  };
  std::vector<Adapter> adapters;
  at::ScalarType dtype = at::kFloat;  // what the layer computes in
  static Linear load(const WeightSource& w, const std::string& prefix, int64_t in, int64_t out, bool bias = true);
  at::Tensor operator()(const at::Tensor& x) const;
  // GELU's tanh approximation of the output (a feed-forward's first layer): on a GPU with a dense weight and a
  // bias, in the GEMM's epilogue (cuBLASLt through at::_addmm_activation: no pass over the wide hidden values,
  // the GELU taken before the rounding to the run's dtype); elsewhere over the output, in place (held once).
  at::Tensor gelu_tanh(const at::Tensor& x) const;
};

// Layers with the same input as one, their outputs concatenated (one GEMM reads the input once).
Linear fuse_outputs(const std::vector<Linear>& parts);

// Rotary positions for queries or keys [B, heads, S, hd]: rows [from, S) rotated by the tables cos, sin
// [S - from, hd] (float32) in interleaved pairs (2k, 2k + 1), in float32: x * cos + (-x_odd, x_even) * sin, as
// diffusers' apply_rotary_emb; the rows before `from` (text) as they are. Undefined tables: no rotation.
struct Rotation {
  at::Tensor cos, sin;
  int64_t from = 0;
};
at::Tensor rotate(const at::Tensor& x, const Rotation& r);

// The norms take a rotation to apply after them: over a head's queries or keys in bfloat16 on a GPU, norm and
// rotation are one kernel that reads the strided view in place (kernels/head_rows.h); elsewhere ATen's ops.
struct LayerNorm {
  at::Tensor weight, bias;  // undefined without elementwise affine
  int64_t dim = 0;
  double eps = 1e-5;
  static LayerNorm load(const WeightSource& w, const std::string& prefix, int64_t dim, double eps, bool affine);
  at::Tensor operator()(const at::Tensor& x, const Rotation& r = {}) const;
  // out = this norm of x [B, n, dim], times (1 + scale), plus shift (scale, shift [B, 1, dim]: a block's
  // modulation); `out` may be a view into a larger buffer. In bfloat16 on a GPU one kernel
  // (kernels/modulated_norm.h), elsewhere ATen's norm and addcmul.
  void modulate_into(const at::Tensor& out, const at::Tensor& x, const at::Tensor& shift, const at::Tensor& scale) const;
};

// Root-mean-square norm over the last dimension, computed in float32 (diffusers' RMSNorm), rounded to the
// weight's dtype, then scaled; then the rotation, if any (as LayerNorm's).
struct RmsNorm {
  at::Tensor weight;
  double eps = 1e-6;
  static RmsNorm load(const WeightSource& w, const std::string& prefix, int64_t dim, double eps);
  at::Tensor operator()(const at::Tensor& x, const Rotation& r = {}) const;
};

// Every tensor the layers hold (weights, biases, packed bytes; undefined ones left out), in order: a block's
// tensors for DitModel::block_tensors.
inline void add_tensors(std::vector<at::Tensor>& out, const at::Tensor& t) {
  if (t.defined()) out.push_back(t);
}
inline void add_tensors(std::vector<at::Tensor>& out, const Linear& l) {
  add_tensors(out, l.weight), add_tensors(out, l.bias), add_tensors(out, l.packed.bytes);
  add_tensors(out, l.fp8.values), add_tensors(out, l.fp8.scales);
  for (const auto& a : l.adapters) add_tensors(out, a.down), add_tensors(out, a.up);
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

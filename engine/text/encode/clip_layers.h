// CLIP's transformer layers (transformers' CLIPEncoderLayer), shared by its text tower (FLUX.1's prompt), its
// vision tower (Wan2.1 image-to-video's picture) and SigLIP's, named alike (HunyuanVideo-1.5's picture):
// pre-norm self-attention and a GELU, tanh-GELU or quick-GELU MLP.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace studio::text {

struct ClipLayers {
  struct Affine {  // a LayerNorm's or a linear layer's weight and bias
    at::Tensor weight, bias;
  };
  struct Layer {
    Affine norm1, norm2, q, k, v, out, fc1, fc2;
  };
  std::vector<Layer> layers;
  int64_t heads = 1, width = 0;
  double eps = 1e-5;
  enum class Activation { QuickGelu, Gelu, GeluTanh };  // hidden_act quick_gelu, gelu, gelu_pytorch_tanh
  Activation activation = Activation::QuickGelu;

  // `take(name, shape)` reads a weight; `prefix` is "text_model.encoder.layers." or "vision_model.encoder.layers.".
  using Take = std::function<at::Tensor(const std::string&, std::vector<int64_t>)>;
  static ClipLayers load(const Take& take, const std::string& prefix, int count, int64_t width, int64_t inner,
                         int64_t heads, double eps, const std::string& hidden_act);
  // x [B, L, width] through the first `count` layers, `mask` [L, L] (or undefined) added to the scores.
  at::Tensor run(at::Tensor x, const at::Tensor& mask, size_t count) const;
  at::Tensor norm(const at::Tensor& x, const Affine& n) const;
};

}  // namespace studio::text

#include "text/encode/clip_layers.h"

#include <cmath>

#include <ATen/TensorOperators.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/softmax.h>

namespace studio::text {

ClipLayers ClipLayers::load(const Take& take, const std::string& prefix, int count, int64_t width, int64_t inner,
                            int64_t heads, double eps, const std::string& hidden_act) {
  ClipLayers c;
  c.heads = heads, c.width = width, c.eps = eps;
  c.activation = hidden_act == "gelu"                ? Activation::Gelu
                 : hidden_act == "gelu_pytorch_tanh" ? Activation::GeluTanh
                                                    : Activation::QuickGelu;
  auto affine = [&](const std::string& name, int64_t out, int64_t in) {
    return Affine{take(name + ".weight", in ? std::vector<int64_t>{out, in} : std::vector<int64_t>{out}),
                  take(name + ".bias", {out})};
  };
  for (int i = 0; i < count; ++i) {
    const std::string p = prefix + std::to_string(i) + ".";
    c.layers.push_back({affine(p + "layer_norm1", width, 0), affine(p + "layer_norm2", width, 0),
                        affine(p + "self_attn.q_proj", width, width), affine(p + "self_attn.k_proj", width, width),
                        affine(p + "self_attn.v_proj", width, width), affine(p + "self_attn.out_proj", width, width),
                        affine(p + "mlp.fc1", inner, width), affine(p + "mlp.fc2", width, inner)});
  }
  return c;
}

at::Tensor ClipLayers::norm(const at::Tensor& x, const Affine& n) const {
  return at::layer_norm(x, {width}, n.weight, n.bias, eps);
}

at::Tensor ClipLayers::run(at::Tensor x, const at::Tensor& mask, size_t count) const {
  const int64_t B = x.size(0), L = x.size(1);
  const double scale = 1.0 / std::sqrt(double(width / heads));
  auto linear = [](const at::Tensor& t, const Affine& l) { return at::linear(t, l.weight, l.bias); };
  for (size_t i = 0; i < count && i < layers.size(); ++i) {
    const auto& layer = layers[i];
    auto y = norm(x, layer.norm1);
    auto split = [&](const Affine& l) { return linear(y, l).view({B, L, heads, -1}).transpose(1, 2); };
    auto scores = at::matmul(split(layer.q), split(layer.k).transpose(-1, -2)).to(at::kFloat) * scale;
    if (mask.defined()) scores = scores + mask;
    auto attn = at::matmul(at::softmax(scores, -1).to(x.scalar_type()), split(layer.v));
    x = x + linear(attn.transpose(1, 2).reshape({B, L, width}), layer.out);
    y = linear(norm(x, layer.norm2), layer.fc1);
    y = activation == Activation::Gelu       ? at::gelu(y)
        : activation == Activation::GeluTanh ? at::gelu(y, "tanh")
                                             : y * at::sigmoid(1.702 * y);
    x = x + linear(y, layer.fc2);
  }
  return x;
}

}  // namespace studio::text

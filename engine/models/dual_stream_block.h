// The dual-stream (MM-DiT) block that FLUX.1's double-stream blocks and HunyuanVideo-1.5's blocks share:
// the latent and the text rows each keep their own modulation (AdaLayerNormZero: shift, scale and gate for
// the attention, then for the feed-forward, from Linear(SiLU(embedding))), q/k/v projections with per-head
// RMS norms, output projection and GELU(tanh) feed-forward; one joint attention sees both, the latent rows
// rotated by RoPE, the text rows as they are.
#pragma once
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "models/dit_model.h"
#include "models/layers/layers.h"

namespace studio::models {

struct DualStreamBlock {
  struct Stream {
    Linear modulation, q, k, v, out, ff_in, ff_out;
    RmsNorm norm_q, norm_k;
  };
  Stream latent, text;

  // The block at `prefix` ("transformer_blocks.3.") in diffusers' names: norm1 / norm1_context, attn.to_q ... /
  // attn.add_q_proj ..., ff / ff_context; `width` features, heads of `head_dim`, a feed-forward of `mlp`.
  static DualStreamBlock load(const WeightSource& w, const std::string& prefix, int64_t width, int64_t head_dim,
                              int64_t mlp);
  // The block over x, `act` = SiLU(the call's embedding) [B, width]; cos, sin the latent rows' RoPE tables.
  void operator()(Tokens& x, const at::Tensor& act, const at::Tensor& cos, const at::Tensor& sin,
                  const AttentionFn& attention, int64_t head_dim) const;
  // The latent rows' modulated input to the attention (TeaCache's indicator).
  at::Tensor modulated_latent(const at::Tensor& latent, const at::Tensor& act) const;
  std::vector<at::Tensor> tensors() const;
};

}  // namespace studio::models

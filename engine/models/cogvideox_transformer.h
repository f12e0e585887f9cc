// The CogVideoX transformer (CogVideoXTransformer3DModel of diffusers v0.32.2) in all three shapes,
// chosen by config alone: 1.0 with 3D sin-cos positions (2B), 1.0 with 3D RoPE (5B), and 1.5 with
// temporal patches and RoPE on the 'slice' grid.
//
// forward() is the single-process model. Its pieces (embed, run_block, finish) and the attention hook
// are public so that the parallel strategies wrap this one model instead of forking it.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "models/layers.h"
#include "models/positions.h"
#include "plan/model_folder.h"

namespace studio::models {

// softmax(q k^T / sqrt(d)) v over q, k, v [B, heads, S, head_dim] of the tokens this process holds.
using AttentionFn = std::function<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&)>;
AttentionFn local_attention();

// Positions for the video tokens of one latent grid (either table may be undefined).
struct Positions {
  at::Tensor sincos;             // [video_tokens, inner_dim] (2B)
  at::Tensor rope_cos, rope_sin; // [video_tokens, head_dim] (5B, 1.5)
};

class CogVideoXTransformer {
 public:
  // Loads transformer/ of a diffusers folder; every weight is checked against the config.
  static std::shared_ptr<CogVideoXTransformer> load(const std::string& part_dir, const plan::TransformerConfig& cfg,
                                                    at::ScalarType dtype, at::Device device);
  static std::shared_ptr<CogVideoXTransformer> load(io::WeightSet& weights, const plan::TransformerConfig& cfg,
                                                    at::ScalarType dtype, at::Device device);

  const plan::TransformerConfig& config() const { return cfg_; }
  at::ScalarType dtype() const { return dtype_; }
  at::Device device() const { return device_; }

  // Token grid of latents with `frames` x `height` x `width` latent pixels.
  TokenGrid token_grid(int64_t frames, int64_t height, int64_t width) const;
  Positions positions(const TokenGrid& grid) const;

  // hidden [B, F, C, H, W], text [B, T, text_embed_dim], timestep [B] -> [B, F, C_out, H, W].
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& text, const at::Tensor& timestep,
                     const Positions& pos, const AttentionFn& attention = local_attention()) const;

  // --- the pieces forward() runs ---
  struct Tokens {
    at::Tensor video;  // [B, N, D]
    at::Tensor text;   // [B, T, D]
  };
  at::Tensor time_embedding(const at::Tensor& timestep) const;  // [B, time_embed_dim]
  Tokens embed(const at::Tensor& hidden, const at::Tensor& text, const Positions& pos) const;
  // One block over the tokens held; `rope_cos`/`rope_sin` cover exactly the video tokens held.
  void run_block(size_t i, Tokens& x, const at::Tensor& temb, const at::Tensor& rope_cos, const at::Tensor& rope_sin,
                 const AttentionFn& attention) const;
  // norm_final, the adaptive output norm and the projection: video tokens -> patch features.
  at::Tensor project_out(const at::Tensor& video, const at::Tensor& temb) const;
  at::Tensor unpatchify(const at::Tensor& patches, int64_t batch, int64_t frames, int64_t height, int64_t width) const;
  size_t num_blocks() const { return blocks_.size(); }

 private:
  struct AdaNormZero {  // CogVideoXLayerNormZero
    Linear linear;
    LayerNorm norm;
  };
  struct Block {
    AdaNormZero norm1, norm2;
    Linear to_qkv, to_out;
    LayerNorm norm_q, norm_k;
    Linear ff_in, ff_out;
  };
  plan::TransformerConfig cfg_;
  at::ScalarType dtype_ = at::kFloat;
  at::Device device_ = at::kCPU;
  Linear patch_proj_;  // 1.0: a conv kernel [D, C, p, p] in .weight; 1.5: a linear layer
  Linear text_proj_, time_1_, time_2_, norm_out_linear_, proj_out_;
  LayerNorm norm_final_, norm_out_norm_;
  std::vector<Block> blocks_;
};

}  // namespace studio::models

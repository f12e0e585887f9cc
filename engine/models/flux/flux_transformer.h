// The FLUX.1 transformer (FluxTransformer2DModel of diffusers v0.32.2), dev (guidance embedding) and
// schnell (none), behind the family seam (models/dit_model.h). Its latent layout is the VAE's,
// [B, C, h, w]: embed() packs 2x2 patches into tokens (token i * w/2 + j holds channel c * 4 + dy * 2 + dx
// of latent pixel (2i + dy, 2j + dx), as FluxPipeline packs them) and unpatchify() unpacks. Text rows
// come first in every attention; the double-stream blocks keep text and image weights apart, the
// single-stream blocks run both through one set. RoPE rotates the image rows only: FLUX's text ids are
// zero, which rotates by nothing.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "io/weights/weights.h"
#include "models/dit_model.h"
#include "models/dual_stream_block.h"
#include "models/layers/layers.h"
#include "plan/families/flux_config.h"

namespace studio::models {

// [B, C, h, w] <-> [B, h/2 * w/2, 4C] (FluxPipeline's _pack_latents / _unpack_latents).
at::Tensor pack_latents(const at::Tensor& latents);
at::Tensor unpack_latents(const at::Tensor& packed, int64_t height, int64_t width);

// FLUX's rotary tables for a grid of packed tokens, ids (0, row, col), [rows * cols, head_dim] each.
Positions flux_positions(const plan::FluxTransformerConfig& cfg, const TokenGrid& grid);

class FluxTransformer final : public DitModel {
 public:
  // Loads transformer/ of a diffusers folder, the blocks in `range` only (double-stream blocks first);
  // every weight is checked against the config.
  static std::shared_ptr<FluxTransformer> load(const std::string& part_dir, const plan::FluxTransformerConfig& cfg,
                                               at::ScalarType dtype, at::Device device, BlockRange range = {},
                                               std::shared_ptr<BlockWeights> block_weights = nullptr);
  static std::shared_ptr<FluxTransformer> load(io::WeightSet& weights, const plan::FluxTransformerConfig& cfg,
                                               at::ScalarType dtype, at::Device device, BlockRange range = {},
                                               std::shared_ptr<BlockWeights> block_weights = nullptr);

  const plan::FluxTransformerConfig& config() const { return cfg_; }
  at::ScalarType dtype() const override { return dtype_; }
  at::Device device() const override { return device_; }
  Guidance guidance() const override { return cfg_.guidance_embeds ? Guidance::Embedded : Guidance::None; }
  int64_t width() const override { return cfg_.inner_dim(); }
  size_t num_blocks() const override { return doubles_.size() + singles_.size(); }

  void check_inputs(const at::Tensor& latents, const at::Tensor& text, const char* text_name) const override;
  TokenGrid token_grid(const at::Tensor& latents) const override;
  Positions positions(const TokenGrid& grid) const override;
  std::vector<int64_t> output_shape(const at::Tensor& latents) const override;

  Conditioning condition(const StepInputs& in) const override;
  Tokens embed(const StepInputs& in, const Positions& pos) const override;
  std::vector<at::Tensor> block_tensors(size_t i) const override;
  ChangeIndicator teacache_indicator(const Tokens& x, const Conditioning& c) const override;
  at::Tensor project_out(const at::Tensor& latent, const Conditioning& c) const override;
  at::Tensor unpatchify(const at::Tensor& patches, const at::Tensor& latents) const override;

 protected:
  void block_forward(size_t i, Tokens& x, const Conditioning& c, const at::Tensor& rope_cos, const at::Tensor& rope_sin,
                     const AttentionFn& attention) const override;

 private:
  struct Embedder {  // diffusers' TimestepEmbedding / PixArtAlphaTextProjection: linear, SiLU, linear
    Linear linear_1, linear_2;
    at::Tensor operator()(const at::Tensor& x) const;
  };
  struct SingleBlock {
    Linear modulation, q, k, v, proj_mlp, proj_out;
    RmsNorm norm_q, norm_k;
  };
  void run_single(const SingleBlock& b, Tokens& x, const at::Tensor& act, const at::Tensor& cos, const at::Tensor& sin,
                  const AttentionFn& attention) const;
  at::Tensor heads(const at::Tensor& x) const;  // [B, S, D] -> [B, heads, S, head_dim]

  plan::FluxTransformerConfig cfg_;
  at::ScalarType dtype_ = at::kFloat;
  at::Device device_ = at::kCPU;
  Linear x_embedder_, context_embedder_, norm_out_, proj_out_;
  Embedder time_, guidance_, text_;
  std::vector<DualStreamBlock> doubles_;  // every block; the weights of those in range_ only
  std::vector<SingleBlock> singles_;
  BlockRange range_;
};

}  // namespace studio::models

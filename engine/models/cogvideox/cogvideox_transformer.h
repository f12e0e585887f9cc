// The CogVideoX transformer (CogVideoXTransformer3DModel of diffusers v0.32.2) in all three shapes,
// chosen by config alone: 1.0 with 3D sin-cos positions (2B), 1.0 with 3D RoPE (5B), and 1.5 with
// temporal patches and RoPE on the 'slice' grid; and the image-to-video ones (0.35.2's
// CogVideoXImageToVideoPipeline): the picture's latents joined to the noise's channels, 5B-I2V's learned
// position table (text and video rows) on top of RoPE, 1.5-I2V's `ofs` embedding added to the timestep's.
//
// It implements the family seam (models/dit_model.h): latents [B, F, C, H, W], text rows then video rows.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "models/dit_model.h"
#include "models/layers/layers.h"
#include "plan/families/cogvideox_config.h"

namespace studio::models {

class CogVideoXTransformer final : public DitModel {
 public:
  // Loads transformer/ of a diffusers folder, the blocks in `range` only; every weight is checked
  // against the config.
  static std::shared_ptr<CogVideoXTransformer> load(const std::string& part_dir, const plan::CogVideoXTransformerConfig& cfg,
                                                    at::ScalarType dtype, at::Device device, BlockRange range = {},
                                                    std::shared_ptr<BlockWeights> block_weights = nullptr);
  static std::shared_ptr<CogVideoXTransformer> load(io::WeightSet& weights, const plan::CogVideoXTransformerConfig& cfg,
                                                    at::ScalarType dtype, at::Device device, BlockRange range = {},
                                                    std::shared_ptr<BlockWeights> block_weights = nullptr);

  const plan::CogVideoXTransformerConfig& config() const { return cfg_; }
  at::ScalarType dtype() const override { return dtype_; }
  at::Device device() const override { return device_; }
  Guidance guidance() const override { return Guidance::ClassifierFree; }
  int64_t width() const override { return cfg_.inner_dim(); }
  size_t num_blocks() const override { return blocks_.size(); }

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
  plan::CogVideoXTransformerConfig cfg_;
  at::ScalarType dtype_ = at::kFloat;
  at::Device device_ = at::kCPU;
  Linear patch_proj_;  // 1.0: a conv kernel [D, C, p, p] in .weight; 1.5: a linear layer
  Linear text_proj_, time_1_, time_2_, norm_out_linear_, proj_out_;
  Linear ofs_1_, ofs_2_;     // the ofs embedding (CogVideoX1.5-I2V), SiLU between; undefined without
  at::Tensor learned_pos_;   // [max_text_seq_length + sample video tokens, width] (CogVideoX-5B-I2V), or undefined
  // Whether the learned table applies to `grid`: the sample size's (diffusers computes sin-cos at another).
  bool learned_at(const TokenGrid& grid) const;
  LayerNorm norm_final_, norm_out_norm_;
  std::vector<Block> blocks_;  // every block; the weights of those in range_ only
  BlockRange range_;
};

}  // namespace studio::models

// The Wan2.1 / Wan2.2 transformer (WanTransformer3DModel of diffusers 0.35.2) behind the
// family seam (models/dit_model.h). Its latent layout is the Wan VAE's, [B, C, F, H, W]: embed() cuts
// (pt, ph, pw) patches (a strided 3D convolution) into tokens (frame, row, column) and unpatchify() puts
// them back. Text is not part of the sequence: each block runs self-attention over the video tokens (RMS
// norm of q and k across all heads, 3D RoPE), then cross-attention from them to the projected text (kept
// whole on every rank), then the feed-forward; modulation is a learned table plus the timestep's
// projection. Norms and modulation run in float32, as diffusers keeps them. Image-to-video joins the condition's
// channels to the latents before the patches are cut; Wan2.1 I2V's image tokens go before the text tokens,
// and each cross-attention attends to them with their own keys and values and adds the two results.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "io/weights/weights.h"
#include "models/dit_model.h"
#include "models/layers/layers.h"
#include "plan/families/wan_config.h"

namespace studio::models {

// Wan's rotary tables for a grid of tokens, [tokens, head_dim] each, in models::Rotation's layout. diffusers
// splits head_dim's frequency table by [d - 2(d/3), d/3, d/3] over (frame, row, column) although it was
// built from [d - 4(d/6), 2(d/6), 2(d/6)] pairs (the two agree for d = 128); a pair cut in two takes its
// cosine from the first half's axis and its sine from the second's. These tables do exactly that.
Positions wan_positions(const plan::WanTransformerConfig& cfg, const TokenGrid& grid);

class WanTransformer final : public DitModel {
 public:
  // Loads transformer/ (or transformer_2/) of a diffusers folder, the blocks in `range` only; every weight
  // is checked against the config.
  static std::shared_ptr<WanTransformer> load(const std::string& part_dir, const plan::WanTransformerConfig& cfg,
                                              at::ScalarType dtype, at::Device device, BlockRange range = {},
                                              std::shared_ptr<BlockWeights> block_weights = nullptr);
  static std::shared_ptr<WanTransformer> load(io::WeightSet& weights, const plan::WanTransformerConfig& cfg,
                                              at::ScalarType dtype, at::Device device, BlockRange range = {},
                                              std::shared_ptr<BlockWeights> block_weights = nullptr);

  const plan::WanTransformerConfig& config() const { return cfg_; }
  at::ScalarType dtype() const override { return dtype_; }
  at::Device device() const override { return device_; }
  Guidance guidance() const override { return Guidance::ClassifierFree; }
  int64_t width() const override { return cfg_.inner_dim(); }
  size_t num_blocks() const override { return blocks_.size(); }
  bool joint_text() const override { return false; }

  void check_inputs(const at::Tensor& latents, const at::Tensor& text, const char* text_name) const override;
  TokenGrid token_grid(const at::Tensor& latents) const override;
  Positions positions(const TokenGrid& grid) const override;
  std::vector<int64_t> output_shape(const at::Tensor& latents) const override;

  // embedding: the blocks' timestep projection [B, 6 * width]; head: the timestep embedding [B, width].
  Conditioning condition(const StepInputs& in) const override;
  Tokens embed(const StepInputs& in, const Positions& pos) const override;
  // TeaCache4Wan2.1 (without its "ret steps" mode): the timestep embedding, the same for every token.
  std::vector<at::Tensor> block_tensors(size_t i) const override;
  ChangeIndicator teacache_indicator(const Tokens& x, const Conditioning& c) const override;
  at::Tensor project_out(const at::Tensor& latent, const Conditioning& c) const override;
  at::Tensor unpatchify(const at::Tensor& patches, const at::Tensor& latents) const override;
  // TI2V: the picture's latent frame put back over what the sampler made of it.
  at::Tensor final_latents(const at::Tensor& latents, const at::Tensor& condition) const override;

 protected:
  void block_forward(size_t i, Tokens& x, const Conditioning& c, const at::Tensor& rope_cos, const at::Tensor& rope_sin,
                     const AttentionFn& attention) const override;

 private:
  struct Attention {  // WanAttention: q, k, v, out, with RMS norms of q and k over every head at once
    Linear q, k, v, out;
    RmsNorm norm_q, norm_k;
    Linear add_k, add_v;   // the cross-attention's keys and values of the image tokens (Wan2.1 I2V)
    RmsNorm norm_added_k;
  };
  struct Block {
    Attention self, cross;
    LayerNorm norm2;          // before the cross-attention (float32 weights); undefined without cross_attn_norm
    Linear ff_in, ff_out;     // GELU (tanh) between
    at::Tensor modulation;    // scale_shift_table [1, 6, width], float32
  };
  at::Tensor heads(const at::Tensor& x) const;  // [B, S, D] -> [B, heads, S, head_dim]

  plan::WanTransformerConfig cfg_;
  at::ScalarType dtype_ = at::kFloat;
  at::Device device_ = at::kCPU;
  at::Tensor patch_weight_, patch_bias_;  // Conv3d [width, C, pt, ph, pw]
  Linear time_1_, time_2_;                // the timestep embedder (float32 weights), SiLU between
  Linear time_proj_;                      // SiLU(temb) -> the blocks' 6 modulation vectors
  Linear text_1_, text_2_;                // the text projection, GELU (tanh) between
  // The image tokens' embedding (WanImageEmbedding): learned positions (FLF2V), float32 LayerNorm, a GELU
  // feed-forward, float32 LayerNorm. Undefined without image_dim.
  at::Tensor image_pos_;
  LayerNorm image_norm1_, image_norm2_;
  Linear image_1_, image_2_;
  Linear proj_out_;
  at::Tensor out_modulation_;  // scale_shift_table [1, 2, width] (shift, scale), float32
  std::vector<Block> blocks_;  // every block; the weights of those in range_ only
  BlockRange range_;
};

}  // namespace studio::models

// The HunyuanVideo-1.5 transformer (HunyuanVideo15Transformer3DModel of diffusers v0.42.1) behind the family
// seam (models/dit_model.h). Its latent layout is the VAE's, [B, C, F, h, w]; its input joins the picture's
// latents and mask as channels (zeros from words alone). The text rows it attends to are the picture's
// SigLIP tokens, the ByT5 glyph tokens (StepInputs::text_2) and the Qwen tokens after their refiner, each
// with its type embedding, in that order. The reference pads them and masks the padding as keys; here the
// caller gives the valid rows alone, which attention cannot tell apart from the masked call: the padding's
// keys are hidden there and its query rows reach no latent token. The guidance branches' texts differ in
// length, so each branch is a call of its own (StepInputs::text_valid says which rows are real). Like FLUX.1,
// the model is given t / 1000 (FlowMatchEuler's model timestep) and scales it back itself.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "io/weights/weights.h"
#include "models/dit_model.h"
#include "models/dual_stream_block.h"
#include "models/layers/layers.h"
#include "plan/families/hunyuan15_config.h"

namespace studio::models {

class Hunyuan15Transformer final : public DitModel {
 public:
  // Loads transformer/ of a diffusers folder, the blocks in `range` only; every weight checked against the config.
  static std::shared_ptr<Hunyuan15Transformer> load(io::WeightSet& weights, const plan::Hunyuan15TransformerConfig& cfg,
                                                    at::ScalarType dtype, at::Device device, BlockRange range = {},
                                                    std::shared_ptr<BlockWeights> block_weights = nullptr);

  const plan::Hunyuan15TransformerConfig& config() const { return cfg_; }
  at::ScalarType dtype() const override { return dtype_; }
  at::Device device() const override { return device_; }
  Guidance guidance() const override { return Guidance::ClassifierFree; }
  int64_t width() const override { return cfg_.inner_dim(); }
  size_t num_blocks() const override { return blocks_.size(); }
  bool ragged_text() const override { return true; }

  void check_inputs(const at::Tensor& latents, const at::Tensor& text, const char* text_name) const override;
  TokenGrid token_grid(const at::Tensor& latents) const override;
  Positions positions(const TokenGrid& grid) const override;
  std::vector<int64_t> output_shape(const at::Tensor& latents) const override;

  Conditioning condition(const StepInputs& in) const override;
  int64_t text_rows(const StepInputs& in, const Conditioning& c) const override;
  Tokens embed(const StepInputs& in, const Positions& pos) const override;
  std::vector<at::Tensor> block_tensors(size_t i) const override;
  ChangeIndicator teacache_indicator(const Tokens& x, const Conditioning& c) const override;
  at::Tensor project_out(const at::Tensor& latent, const Conditioning& c) const override;
  at::Tensor unpatchify(const at::Tensor& patches, const at::Tensor& latents) const override;

 protected:
  void block_forward(size_t i, Tokens& x, const Conditioning& c, const at::Tensor& rope_cos, const at::Tensor& rope_sin,
                     const AttentionFn& attention) const override;

 private:
  struct Mlp {  // Linear, activation, Linear (diffusers' TimestepEmbedding and PixArtAlphaTextProjection with SiLU)
    Linear linear_1, linear_2;
  };
  struct RefinerBlock {  // HunyuanVideoIndividualTokenRefinerBlock
    LayerNorm norm1, norm2;
    Linear q, k, v, out, ff_in, ff_out, gates;
  };
  // The Qwen rows through the token refiner (context_embedder), conditioned on the timestep and their mean.
  at::Tensor refine(const at::Tensor& text, const at::Tensor& timestep) const;
  at::Tensor embed_timestep(const Mlp& mlp, const at::Tensor& timestep) const;

  plan::Hunyuan15TransformerConfig cfg_;
  at::ScalarType dtype_ = at::kFloat;
  at::Device device_ = at::kCPU;
  Linear x_embedder_, refiner_in_, glyph_1_, glyph_2_, glyph_3_, image_1_, image_2_, norm_out_, proj_out_;
  LayerNorm glyph_norm_, image_norm_in_, image_norm_out_;
  Mlp time_, refiner_time_, refiner_text_;
  std::vector<RefinerBlock> refiner_;
  at::Tensor cond_type_;  // [3, width]: the Qwen, ByT5 and picture rows' type embeddings
  std::vector<DualStreamBlock> blocks_;  // every block; the weights of those in range_ only
  BlockRange range_;
};

}  // namespace studio::models

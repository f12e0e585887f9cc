// The seam between a Diffusion Transformer family and everything above models/: parallel/ wraps these
// pieces and pipeline/ calls them, never a family's own type. Each family implements DitModel in its own
// files (cogvideox_transformer.* today). forward() runs the pieces in one process; every parallel strategy
// runs the same pieces over its share of the tokens and must equal it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

namespace studio::models {

// softmax(q k^T / sqrt(d)) v over q, k, v [B, heads, S, head_dim] of the tokens this process holds; the
// hook sequence parallelism and PipeFusion replace.
using AttentionFn = std::function<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&)>;
AttentionFn local_attention();

// The latent tokens' grid after patching: frames (1 for an image), rows, columns. Token n is
// (frame, row, col) in that order, so a band of rows of every frame is a PipeFusion patch.
struct TokenGrid {
  int frames = 0;
  int rows = 0;
  int cols = 0;
  int64_t tokens() const { return int64_t(frames) * rows * cols; }
};

// The tokens between blocks: the text rows and the latent rows (video or image patches), each [B, n, width].
// Attention sees one joint sequence, text rows first (CogVideoX, FLUX): sequence parallelism and PipeFusion
// shard it so. A family whose text is reached by cross-attention instead (Wan: DitModel::joint_text() is
// false) keeps the text rows whole on every rank; only the latent rows are sharded.
struct Tokens {
  at::Tensor latent;
  at::Tensor text;
};

// Position tables for one latent grid; either may be undefined.
struct Positions {
  at::Tensor additive;            // [latent tokens, width], added to the latent tokens by embed()
  at::Tensor rope_cos, rope_sin;  // [latent tokens, head_dim]: rotary tables of the latent rows
};

// One model call's inputs, for the whole batch (both guidance branches).
struct StepInputs {
  at::Tensor latents;   // in the family's latent layout, batch first
  at::Tensor text;      // [B, T, text_embed_dim]
  at::Tensor timestep;  // [B], what the family's sampler gives the model
  at::Tensor pooled;    // [B, pooled dim]: a pooled text vector (FLUX's CLIP), or undefined
  at::Tensor guidance;  // [B]: the guidance scale, for a family that embeds it (FLUX.1-dev), or undefined
  // Image-to-video, else undefined: the channels the family joins to the latents (the picture's latents and
  // mask, in the latents' layout), and the picture's tokens the blocks attend to [B, n, image_dim] (Wan2.1's CLIP).
  at::Tensor condition;
  at::Tensor image;
  // A second text the family embeds apart (HunyuanVideo-1.5's ByT5 glyph rows) [B, T2, dim], or undefined.
  at::Tensor text_2;
  // [B] int64: how many of each sample's rows of text and text_2 are real, the rest zero padding, for a family
  // whose guidance branches differ in text length (DitModel::ragged_text); undefined: every row is.
  at::Tensor text_valid, text_2_valid;
  // Samples [first, first + count) of every member (a CFG rank's half).
  StepInputs rows(int64_t first, int64_t count) const;
};

// What the blocks are conditioned on in one call, made once per call.
struct Conditioning {
  at::Tensor embedding;  // [B, embedding dim]: the timestep's (and the family's other global inputs')
  at::Tensor head;       // [B, width]: the output head's own, where it differs (Wan's timestep embedding)
  int64_t image_tokens = 0;  // Tokens::text starts with this many picture tokens (Wan2.1 image-to-video)
  // Where latent tokens differ in their timestep (Wan2.2 TI2V's picture frame): embedding and head are
  // [B, U, ...], one per distinct timestep, and token_rows [latent tokens held] (int64) says which of the U
  // conditions each latent token. Sharded with the latent rows, as the RoPE tables. Undefined: one per sample.
  at::Tensor token_rows;
  // This conditioning for the latent tokens `rows` selects (indices into the call's latent tokens).
  Conditioning for_rows(const at::Tensor& rows) const;
};

// What TeaCache measures of a call (its "modulated input" for the family), before the blocks run.
struct ChangeIndicator {
  at::Tensor values;
  bool latent_rows = false;  // [B, latent rows held, ...]: split by sequence parallelism, else whole everywhere
};

// The blocks a process holds weights for: all of them, or a PipeFusion stage's [first, end).
struct BlockRange {
  size_t first = 0, end = SIZE_MAX;
  bool holds(size_t i) const { return i >= first && i < end; }
};

// How a family is guided: classifier-free (a second, unconditional branch in the batch), by a guidance
// embedding (one branch, the scale an input), or not at all.
enum class Guidance { ClassifierFree, Embedded, None };

class DitModel;

// Where a model's block weights live between calls when not in the model (a shard on each rank, host memory):
// keep() takes block i's tensors (DitModel::block_tensors; none for another PipeFusion stage's block) as the model
// loads it, in block order; before() makes them whole, after() lets them go again. Every rank of a group calls
// them for the same blocks in the same order.
class BlockWeights {
 public:
  virtual ~BlockWeights() = default;
  virtual void keep(size_t block, const std::vector<at::Tensor>& tensors) = 0;
  virtual void before(size_t block) = 0;
  virtual void after(size_t block) = 0;
};

// A step cache (cache/): runs a call's blocks, or some of them and what it kept from an earlier call.
// It holds one cache context (the calls of one guidance branch, or of the batch when the family runs its
// branches as one call), so one is made per transformer a run steps through.
class BlockCache {
 public:
  virtual ~BlockCache() = default;
  // Blocks [0, num_blocks) of `model` over x, as DitModel::run_blocks; returns whether every block ran.
  virtual bool run_blocks(const DitModel& model, Tokens& x, const Conditioning& c, const at::Tensor& rope_cos,
                          const at::Tensor& rope_sin, const AttentionFn& attention) = 0;
};

class DitModel {
 public:
  virtual ~DitModel() = default;

  virtual at::ScalarType dtype() const = 0;
  virtual at::Device device() const = 0;
  virtual Guidance guidance() const = 0;
  virtual int64_t width() const = 0;  // the tokens' features between blocks
  virtual size_t num_blocks() const = 0;
  // Whether the text rows are part of the sequence attention sees (CogVideoX, FLUX), or reached by
  // cross-attention and kept whole on every rank (Wan).
  virtual bool joint_text() const { return true; }
  // Whether the guidance branches' texts differ in length (StepInputs::text_valid): each branch is then a call
  // of its own, as the reference makes it (HunyuanVideo-1.5: the padding would need a key mask otherwise).
  virtual bool ragged_text() const { return false; }

  // InputError naming the tensor (the text one as `text_name`) and the shape that would fit.
  virtual void check_inputs(const at::Tensor& latents, const at::Tensor& text, const char* text_name) const = 0;
  virtual TokenGrid token_grid(const at::Tensor& latents) const = 0;
  virtual Positions positions(const TokenGrid& grid) const = 0;  // on the model's device
  virtual std::vector<int64_t> output_shape(const at::Tensor& latents) const = 0;

  // --- the pieces forward() runs, in this order ---
  virtual Conditioning condition(const StepInputs& in) const = 0;
  // How many text rows embed() makes of `in` (a PipeFusion stage that receives them sizes its buffer so): the
  // text's and the picture tokens the conditioning says it leads with, unless the family embeds more.
  virtual int64_t text_rows(const StepInputs& in, const Conditioning& c) const { return in.text.size(1) + c.image_tokens; }
  // Every text and latent token, on the model's device and dtype.
  virtual Tokens embed(const StepInputs& in, const Positions& pos) const = 0;
  // Block i over the tokens held; `rope_cos`/`rope_sin` cover exactly the latent rows held. Its weights are
  // whole for the call (BlockWeights makes them so where they live elsewhere between calls).
  void run_block(size_t i, Tokens& x, const Conditioning& c, const at::Tensor& rope_cos, const at::Tensor& rope_sin,
                 const AttentionFn& attention) const;
  // TeaCache's indicator for a call, from the embedded tokens and the conditioning.
  virtual ChangeIndicator teacache_indicator(const Tokens& x, const Conditioning& c) const = 0;
  // Latent rows [B, n, width] -> patch features [B, n, f].
  virtual at::Tensor project_out(const at::Tensor& latent, const Conditioning& c) const = 0;
  // Patch features of every latent token [B, N, f] -> the output, in the layout of `latents`.
  virtual at::Tensor unpatchify(const at::Tensor& patches, const at::Tensor& latents) const = 0;
  // The denoised latents as the reference pipeline hands them to the VAE, given the run's condition
  // (StepInputs::condition, per sample, or undefined): the latents themselves but where a family says otherwise.
  virtual at::Tensor final_latents(const at::Tensor& latents, const at::Tensor& condition) const {
    (void)condition;
    return latents;
  }

  // Every tensor block i holds (weights, biases, packed bytes); none for a block another PipeFusion stage holds.
  virtual std::vector<at::Tensor> block_tensors(size_t i) const = 0;
  // Where the blocks' weights live between calls; null: in the model, whole. It keeps the blocks loaded so far
  // (all of a loaded model's), then each block as the family's load reads it: a model given it before its blocks
  // load (load_transformer's `block_weights`) is never whole in memory.
  void set_block_weights(std::shared_ptr<BlockWeights> w);

  // Every block in order over the tokens held, or what `cache` decides (when given); true when all ran.
  bool run_blocks(Tokens& x, const Conditioning& c, const at::Tensor& rope_cos, const at::Tensor& rope_sin,
                  const AttentionFn& attention, BlockCache* cache = nullptr) const;

  // The single-process model: the output for the whole batch (a call per sample where the text is ragged).
  at::Tensor forward(const StepInputs& in, const Positions& pos, const AttentionFn& attention = local_attention(),
                     BlockCache* cache = nullptr) const;

 protected:
  // The family's block i, its weights whole.
  virtual void block_forward(size_t i, Tokens& x, const Conditioning& c, const at::Tensor& rope_cos,
                             const at::Tensor& rope_sin, const AttentionFn& attention) const = 0;
  // The family's load calls this after each block's entry is in place (held or not), in order.
  void block_loaded();

 private:
  std::shared_ptr<BlockWeights> block_weights_;
};

}  // namespace studio::models

// A model family as the launcher, the studio and the workers see it, torch-free: its names, sizes,
// defaults, geometry, the rules its jobs follow and its memory. Each family answers in its own file
// (plan/cogvideox_family.cpp, plan/flux_family.cpp, plan/wan_family.cpp); plan/job.cpp and plan/parallel.cpp hold the rules
// that are the same for every family and ask the family for the rest.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "plan/job.h"

namespace studio::plan {

struct ParallelConfig;
struct MemoryEstimate;

// What a block does besides its GEMMs and attention, as the cost model counts it (docs/cost-model.md):
// the operations it dispatches (each costs a launch, whatever its size), and the values its elementwise
// work (norms, modulation, activations, residuals, rotary embedding) reads and writes per token it holds,
// in units of the width and of the feed-forward's hidden width. tests/test_op_counts counts them on the
// families' blocks as they run.
struct BlockCosts {
  double ops_per_block = 0;      // averaged over the model's kinds of block (FLUX has two)
  double values_per_width = 0;   // per token per block, times the width
  double values_per_hidden = 0;  // per token per block, times `hidden`
  int64_t hidden = 0;            // the feed-forward's hidden width
  int ops_per_call = 0;          // outside the blocks, once per model call (embeddings, output head)
  int ops_per_step = 0;          // outside the model's calls, once per step (guidance, the sampler)
  double values_per_token(double width) const { return values_per_width * width + values_per_hidden * double(hidden); }
};

class FamilyRules {
 public:
  virtual ~FamilyRules() = default;

  virtual std::string sampler_name(const ModelFolder& m) const = 0;
  virtual bool makes_video() const = 0;         // frames and fps apply
  virtual bool classifier_free() const = 0;     // guidance runs a second branch (CFG parallelism applies)
  virtual bool dynamic_cfg() const { return false; }  // --use_dynamic_cfg (CogVideoX's cosine schedule) applies
  virtual bool takes_pooled_text() const = 0;   // --prompt_embeds holds pooled_prompt_embeds too
  virtual bool takes_prompt_2() const = 0;      // a second text encoder reads its own prompt (--prompt_2)
  virtual int pixel_step(const ModelFolder& m) const = 0;  // height and width are multiples of it
  virtual int attention_heads(const ModelFolder& m) const = 0;
  virtual int blocks(const ModelFolder& m) const = 0;      // what PipeFusion divides into stages
  virtual int train_steps(const ModelFolder& m) const = 0; // the sampler's training timesteps
  // TeaCache's published rescaling polynomial for the model (highest power first, as numpy's poly1d) and
  // the mildest threshold its authors published for the family (docs/design.md, "Step caching").
  virtual std::vector<double> teacache_coefficients(const ModelFolder& m) const = 0;
  virtual double teacache_threshold() const = 0;
  // Whether the reference pipeline calls the transformer once per guidance branch (Wan: "cond", then
  // "uncond") rather than once for the batch of both: a step cache then keeps a context per branch.
  virtual bool calls_per_guidance_branch() const { return false; }
  // The cost model's counts (plan/cost_model.h, docs/cost-model.md), FLOPs as 2 per multiply-add: one
  // block's GEMMs per token it holds (the linear layers' weights times 2); its attention per query-key pair
  // (Q K^T and P V over the inner width: 4 x heads x head_dim); whether the text joins the attended sequence
  // (else the latent attends to it in a cross-attention); the VAE decoder per output pixel and frame.
  virtual double gemm_flops_per_token(const ModelFolder& m) const = 0;
  virtual double attention_flops_per_pair(const ModelFolder& m) const = 0;
  virtual bool joint_text() const { return true; }
  virtual double vae_flops_per_pixel(const ModelFolder& m) const = 0;
  virtual BlockCosts block_costs(const ModelFolder& m) const = 0;

  // Fills the job's 0-valued sizes and steps and an unset guidance scale, as the reference pipeline does.
  virtual void apply_defaults(JobSpec& job, const ModelFolder& m) const = 0;
  // The family's own problems with a job (its sizes, frames, text length, what it cannot do yet).
  virtual void validate(const JobSpec& job, const ModelFolder& m, std::vector<Problem>& out) const = 0;
  virtual LatentGeometry geometry(const JobSpec& job, const ModelFolder& m) const = 0;
  virtual MemoryEstimate memory(const ParallelConfig& p, const JobSpec& job, const ModelFolder& m,
                                int bytes_per_value) const = 0;
};

const FamilyRules& rules_of(const ModelFolder& m);
const FamilyRules& cogvideox_rules();
const FamilyRules& flux_rules();
const FamilyRules& wan_rules();

constexpr double kGiB = 1024.0 * 1024 * 1024;
// A rank's transformer memory: the weights (`block_params` per block, PipeFusion dividing the blocks,
// `other_params` once) and the activations of the tokens it holds for its share of the batch through one
// block at a time (about 16 values per token and channel of `width`), plus the keys and values an
// attention gathers.
double transformer_gib(const ParallelConfig& p, const JobSpec& job, const ModelFolder& m, double block_params,
                       double other_params, double width, int bytes_per_value);

// A convolutional decoder's FLOPs per output pixel: `resnets` residual blocks of two convolutions of
// `taps` taps (27 for 3x3x3, 9 for 3x3) at each level, `widths` from the full-size level down, each level
// below at a quarter of the pixels of the one above.
double decoder_flops_per_pixel(const std::vector<int>& widths, int resnets, int taps);

// "height", 100, 16 -> "--height 100: must be a positive multiple of 16 (...); 96 or 112 would work"
void check_multiple(const char* field, int value, int step, const std::string& why, std::vector<Problem>& out);

}  // namespace studio::plan

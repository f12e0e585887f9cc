// FLUX.1 (dev, with a guidance embedding; schnell, without): the rules of its jobs, as FluxPipeline of
// diffusers v0.32.2 runs it. Images: one frame, no fps, no classifier-free guidance.
#include <algorithm>
#include <cmath>

#include "plan/family.h"
#include "plan/parallel.h"

namespace studio::plan {

namespace {

class FluxRules final : public FamilyRules {
 public:
  std::string sampler_name(const ModelFolder&) const override { return "FlowMatchEulerDiscreteScheduler"; }
  bool makes_video() const override { return false; }
  bool classifier_free() const override { return false; }
  bool takes_pooled_text() const override { return true; }
  bool takes_prompt_2() const override { return true; }
  // The VAE's 8x, times the 2x2 packing.
  int pixel_step(const ModelFolder& m) const override { return m.vae_scale_spatial() * 2; }
  int attention_heads(const ModelFolder& m) const override { return m.flux->transformer.num_attention_heads; }
  int blocks(const ModelFolder& m) const override {
    return m.flux->transformer.num_layers + m.flux->transformer.num_single_layers;
  }

  int train_steps(const ModelFolder& m) const override { return m.flux->scheduler.num_train_timesteps; }
  // TeaCache4FLUX/teacache_flux.py (FLUX.1-dev; the only set published for FLUX.1); 0.25 is the mildest of
  // its README's settings (1.5x on an A800).
  std::vector<double> teacache_coefficients(const ModelFolder&) const override {
    return {4.98651651e+02, -2.83781631e+02, 5.58554382e+01, -3.82021401e+00, 2.64230861e-01};
  }
  double teacache_threshold() const override { return 0.25; }
  // Per token, both kinds of block have 12 D^2 of linear weights (double-stream: q/k/v/out 4 D^2 and the
  // feed-forward 8 D^2 of its stream; single-stream: q/k/v 3, MLP in 4, joint out 5); modulations act once
  // per sample.
  double gemm_flops_per_token(const ModelFolder& m) const override {
    const double D = m.flux->transformer.inner_dim();
    return 2 * 12 * D * D;
  }
  double attention_flops_per_pair(const ModelFolder& m) const override {
    return 4.0 * m.flux->transformer.inner_dim();
  }
  // Counted on our blocks (tests/test_op_counts): a double-stream block 119 operations and 50.1 values per
  // token and width, a single-stream one 73 and 46.7; both read and write the MLP's hidden values twice.
  BlockCosts block_costs(const ModelFolder& m) const override {
    const auto& t = m.flux->transformer;
    const double doubles = t.num_layers, singles = t.num_single_layers, n = std::max(1.0, doubles + singles);
    BlockCosts b;
    b.ops_per_block = (119 * doubles + 73 * singles) / n;
    b.values_per_width = (50.1 * doubles + 46.7 * singles) / n;
    b.values_per_hidden = 2;
    b.hidden = 4 * int64_t(t.inner_dim());
    b.ops_per_call = 58;
    b.ops_per_step = 24;
    return b;
  }
  // An image: the 2D decoder's levels from full size down, layers_per_block + 1 resnets of 3x3 convolutions.
  double vae_flops_per_pixel(const ModelFolder& m) const override {
    if (!m.flux->vae) return 0;
    return decoder_flops_per_pixel(m.flux->vae->block_out_channels, m.flux->vae->layers_per_block + 1, 9);
  }

  void apply_defaults(JobSpec& job, const ModelFolder& m) const override {
    const bool dev = m.family == Family::Flux_Dev;
    if (job.height == 0) job.height = 128 * m.vae_scale_spatial();  // FluxPipeline: default_sample_size 128
    if (job.width == 0) job.width = 128 * m.vae_scale_spatial();
    if (job.num_frames == 0) job.num_frames = 1;
    if (job.fps == 0) job.fps = 1;
    if (job.max_sequence_length == 0) job.max_sequence_length = 512;
    // FluxPipeline says 28 for both; schnell is distilled for 4 (its model card's setting), so 4 it is.
    if (job.num_inference_steps == 0) job.num_inference_steps = dev ? 28 : 4;
    if (std::isnan(job.guidance_scale)) job.guidance_scale = dev ? 3.5 : 0.0;
    const int tile = m.flux->vae ? m.flux->vae->sample_size : 1024;  // diffusers' tile: the VAE's sample size
    if (job.tile_sample_min_height == 0) job.tile_sample_min_height = tile;
    if (job.tile_sample_min_width == 0) job.tile_sample_min_width = tile;
  }

  void validate(const JobSpec& job, const ModelFolder& m, std::vector<Problem>& out) const override {
    const std::string why = "the VAE's " + std::to_string(m.vae_scale_spatial()) + "x times FLUX's 2x2 packing";
    check_multiple("height", job.height, pixel_step(m), why, out);
    check_multiple("width", job.width, pixel_step(m), why, out);
    if (job.num_frames != 1)
      out.push_back({"num_frames", "--num_frames " + std::to_string(job.num_frames) +
                                       ": FLUX.1 makes images; leave --num_frames out (or give 1)"});
    if (!job.negative_prompt.empty())
      out.push_back({"negative_prompt", "--negative_prompt: FLUX.1 has no classifier-free guidance, so no negative "
                                        "prompt; leave it out"});
    if (job.use_dynamic_cfg)
      out.push_back({"use_dynamic_cfg", "--use_dynamic_cfg: CogVideoX's guidance rule; FLUX.1 has no "
                                        "classifier-free guidance; leave it out"});
    if (job.max_sequence_length < 1 || job.max_sequence_length > 512)
      out.push_back({"max_sequence_length", "--max_sequence_length " + std::to_string(job.max_sequence_length) +
                                                ": must be between 1 and 512 (FLUX.1's T5 length)"});
    if (job.vae_tiling)
      for (auto [field, v] : {std::pair{"tile_sample_min_height", job.tile_sample_min_height},
                              std::pair{"tile_sample_min_width", job.tile_sample_min_width}})
        check_multiple(field, v, 4 * m.vae_scale_spatial(),
                       "whole latent pixels, and a quarter of a tile overlaps its neighbour", out);
  }

  LatentGeometry geometry(const JobSpec& job, const ModelFolder& m) const override {
    LatentGeometry g;
    g.has_frames = false;
    g.channels = m.flux->transformer.in_channels / 4;
    g.height = job.height / m.vae_scale_spatial();
    g.width = job.width / m.vae_scale_spatial();
    g.latent_tokens = int64_t(g.height / 2) * (g.width / 2);
    g.text_tokens = job.max_sequence_length;
    return g;
  }

  MemoryEstimate memory(const ParallelConfig& p, const JobSpec& job, const ModelFolder& m, int b) const override {
    const auto& t = m.flux->transformer;
    const double D = t.inner_dim();
    // Double-stream blocks: two streams of modulation (6 D^2), q/k/v/out (4 D^2) and feed-forward (8 D^2);
    // single-stream blocks: modulation (3 D^2), q/k/v (3 D^2), the MLP in (4 D^2) and the joint out (5 D^2).
    const double doubles = 36 * D * D * t.num_layers, singles = 15 * D * D * t.num_single_layers;
    const double block = (doubles + singles) / std::max(1, blocks(m));
    const double other = t.in_channels * D + t.joint_attention_dim * D + 2 * 256 * D + t.pooled_projection_dim * D +
                         6 * D * D + 2 * D * D + D * t.out_channels;
    MemoryEstimate e;
    e.transformer_gib = transformer_gib(p, job, m, block, other, D, b);
    if (m.flux->vae && job.height > 0) {
      // The widest full-size block's activations, a few copies, for the one image.
      const auto& v = *m.flux->vae;
      e.vae_gib = 6.0 * job.height * job.width * v.block_out_channels.front() * 2 * b / kGiB + 0.3;
    }
    return e;
  }
};

}  // namespace

const FamilyRules& flux_rules() {
  static const FluxRules rules;
  return rules;
}

}  // namespace studio::plan

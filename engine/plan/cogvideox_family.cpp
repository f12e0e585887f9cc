// CogVideoX (1.0 with sin-cos positions or RoPE, 1.5 with temporal patches): the rules of its jobs.
#include <algorithm>
#include <cmath>

#include "plan/family.h"
#include "plan/parallel.h"

namespace studio::plan {

namespace {

class CogVideoXRules final : public FamilyRules {
 public:
  std::string sampler_name(const ModelFolder& m) const override { return plan::sampler_name(m.scheduler.kind); }
  bool makes_video() const override { return true; }
  bool classifier_free() const override { return true; }
  bool dynamic_cfg() const override { return true; }
  bool takes_pooled_text() const override { return false; }
  bool takes_prompt_2() const override { return false; }
  int pixel_step(const ModelFolder& m) const override { return m.vae_scale_spatial() * m.transformer.patch_size; }
  int attention_heads(const ModelFolder& m) const override { return m.transformer.num_attention_heads; }
  int blocks(const ModelFolder& m) const override { return m.transformer.num_layers; }
  int train_steps(const ModelFolder& m) const override { return m.scheduler.num_train_timesteps; }
  // TeaCache4CogVideoX1.5/teacache_sample_video.py's coefficients_dict (text to video); 0.1 is the mildest
  // setting its help names ("0.1 for 1.3x speedup").
  std::vector<double> teacache_coefficients(const ModelFolder& m) const override {
    switch (m.family) {
      case Family::CogVideoX_2B: return {-3.10658903e+01, 2.54732368e+01, -5.92380459e+00, 1.75769064e+00, -3.61568434e-03};
      case Family::CogVideoX_5B: return {-1.53880483e+03, 8.43202495e+02, -1.34363087e+02, 7.97131516e+00, -5.23162339e-02};
      default: return {2.50210439e+02, -1.65061612e+02, 3.57804877e+01, -7.81551492e-01, 3.58559703e-02};
    }
  }
  double teacache_threshold() const override { return 0.1; }
  // q/k/v/out (4 D^2) and the feed-forward (8 D^2) per token; the adaptive norms' linears act once per
  // sample, not per token.
  double gemm_flops_per_token(const ModelFolder& m) const override {
    const double D = m.transformer.inner_dim();
    return 2 * 12 * D * D;
  }
  double attention_flops_per_pair(const ModelFolder& m) const override { return 4.0 * m.transformer.inner_dim(); }
  // Counted on our blocks (tests/test_op_counts): the rotary embedding of q and k (CogVideoX-5B, 1.5) adds
  // 30 operations and 18 values per token and width.
  BlockCosts block_costs(const ModelFolder& m) const override {
    const bool rope = m.transformer.use_rotary_positional_embeddings;
    BlockCosts b;
    b.ops_per_block = rope ? 80 : 50;
    b.values_per_width = rope ? 37.8 : 19.9;
    b.values_per_hidden = 2;  // the GELU reads and writes the feed-forward's hidden values
    b.hidden = 4 * int64_t(m.transformer.inner_dim());
    b.ops_per_call = 39;
    b.ops_per_step = sampler_name(m) == "CogVideoXDPMScheduler" ? 41 : 32;  // DPM's noise and history; DDIM
    return b;
  }
  // The decoder's levels from full size down, layers_per_block + 1 resnets of 3x3x3 convolutions each.
  double vae_flops_per_pixel(const ModelFolder& m) const override {
    if (!m.vae) return 0;
    return decoder_flops_per_pixel(m.vae->block_out_channels, m.vae->layers_per_block + 1, 27);
  }

  void apply_defaults(JobSpec& job, const ModelFolder& m) const override {
    const auto& t = m.transformer;
    if (job.height == 0) job.height = t.sample_height * m.vae_scale_spatial();
    if (job.width == 0) job.width = t.sample_width * m.vae_scale_spatial();
    if (job.num_frames == 0) job.num_frames = t.sample_frames;
    if (job.fps == 0) job.fps = m.family == Family::CogVideoX_15 ? 16 : 8;
    if (job.max_sequence_length == 0) job.max_sequence_length = t.max_text_seq_length;
    if (job.num_inference_steps == 0) job.num_inference_steps = 50;
    if (std::isnan(job.guidance_scale)) job.guidance_scale = 6.0;
    if (job.tile_sample_min_height == 0) job.tile_sample_min_height = 240;  // half of 480 x 720, as diffusers
    if (job.tile_sample_min_width == 0) job.tile_sample_min_width = 360;
  }

  void validate(const JobSpec& job, const ModelFolder& m, std::vector<Problem>& out) const override {
    const auto& t = m.transformer;
    const int s = m.vae_scale_spatial();
    const std::string why = "the VAE's " + std::to_string(s) + "x times the patch size " + std::to_string(t.patch_size);
    check_multiple("height", job.height, pixel_step(m), why, out);
    check_multiple("width", job.width, pixel_step(m), why, out);
    if (job.vae_tiling)
      for (auto [field, v] : {std::pair{"tile_sample_min_height", job.tile_sample_min_height},
                              std::pair{"tile_sample_min_width", job.tile_sample_min_width}})
        if (v < 2 * s || v % s != 0) {
          const int ok = std::max(v, 2 * s) / s * s;
          out.push_back({field, std::string("--") + field + " " + std::to_string(v) +
                                    ": tiles must be a multiple of the VAE's " + std::to_string(s) +
                                    " pixels and at least two latent rows; " + std::to_string(ok) + " or " +
                                    std::to_string(ok + s) + " would work"});
        }
    const int tc = m.vae_scale_temporal();
    if (job.num_frames <= 0 || (job.num_frames - 1) % tc != 0) {
      const int below = job.num_frames <= 1 ? 1 : (job.num_frames - 1) / tc * tc + 1;
      out.push_back({"num_frames", "--num_frames " + std::to_string(job.num_frames) + ": must be " + std::to_string(tc) +
                                       "k+1 (the VAE compresses time " + std::to_string(tc) + "x, keeping the first frame); " +
                                       std::to_string(below) + " or " + std::to_string(below + tc) + " would work"});
    }
    if (job.max_sequence_length < 1 || job.max_sequence_length > 4096)
      out.push_back({"max_sequence_length", "--max_sequence_length " + std::to_string(job.max_sequence_length) +
                                                ": must be between 1 and 4096 (226 is CogVideoX's)"});
    else if (!t.use_rotary_positional_embeddings && job.max_sequence_length != t.max_text_seq_length)
      out.push_back({"max_sequence_length", "--max_sequence_length " + std::to_string(job.max_sequence_length) +
                                                ": this model (3D sin-cos positions) needs exactly its "
                                                "max_text_seq_length, " + std::to_string(t.max_text_seq_length)});
  }

  LatentGeometry geometry(const JobSpec& job, const ModelFolder& m) const override {
    const auto& t = m.transformer;
    LatentGeometry g;
    g.frames = (job.num_frames - 1) / m.vae_scale_temporal() + 1;
    g.padded_frames = g.frames;
    const int pt = t.patch_size_t.value_or(1);
    if (g.frames % pt != 0) g.padded_frames += pt - g.frames % pt;  // the 1.5 pipeline pads at the start
    g.channels = t.in_channels;
    g.height = job.height / m.vae_scale_spatial();
    g.width = job.width / m.vae_scale_spatial();
    g.latent_tokens = int64_t(g.padded_frames / pt) * (g.height / t.patch_size) * (g.width / t.patch_size);
    g.text_tokens = t.max_text_seq_length;
    return g;
  }

  MemoryEstimate memory(const ParallelConfig& p, const JobSpec& job, const ModelFolder& m, int b) const override {
    const auto& t = m.transformer;
    const double D = t.inner_dim(), E = t.time_embed_dim;
    // Per block: two adaptive norms (6D from E each), q/k/v/out (4 D^2), feed-forward (8 D^2).
    const double block = 12 * D * E + 12 * D * D;
    const double other = t.text_embed_dim * D + 2 * D * E + 2 * E * D + D * t.in_channels * t.patch_size * t.patch_size * 2;
    MemoryEstimate e;
    e.transformer_gib = transformer_gib(p, job, m, block, other, D, b);
    if (m.vae && job.height > 0) {
      // One batch of 8 frames at full size through the widest full-size blocks (measured: docs/performance.md).
      const auto& v = *m.vae;
      const double top = v.block_out_channels.size() > 1 ? v.block_out_channels[v.block_out_channels.size() - 2] : 128;
      e.vae_gib = 8.0 * job.height * job.width * (2 * top + 2 * v.block_out_channels.front()) * b / kGiB + 0.5;
      if (p.use_parallel_vae) e.vae_gib = (e.vae_gib - 0.5) / p.world_size() + 0.5;
    }
    return e;
  }
};

}  // namespace

const FamilyRules& cogvideox_rules() {
  static const CogVideoXRules rules;
  return rules;
}

}  // namespace studio::plan

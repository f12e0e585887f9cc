// Wan2.1 and Wan2.2 text-to-video (WanPipeline of diffusers 0.35.2): the rules of its jobs. Wan2.2 A14B has
// two experts of one shape; a run holds one at a time, so its memory is one expert's.
#include <cmath>

#include "plan/family.h"
#include "plan/parallel.h"

namespace studio::plan {

namespace {

class WanRules final : public FamilyRules {
 public:
  std::string sampler_name(const ModelFolder&) const override { return "UniPCMultistepScheduler"; }
  bool makes_video() const override { return true; }
  bool classifier_free() const override { return true; }
  bool takes_pooled_text() const override { return false; }
  bool takes_prompt_2() const override { return false; }
  int pixel_step(const ModelFolder& m) const override {
    return m.vae_scale_spatial() * m.wan->transformer.patch_size[1];
  }
  int attention_heads(const ModelFolder& m) const override { return m.wan->transformer.num_attention_heads; }
  int blocks(const ModelFolder& m) const override { return m.wan->transformer.num_layers; }
  int train_steps(const ModelFolder& m) const override { return m.wan->scheduler.num_train_timesteps; }
  // TeaCache4Wan2.1/teacache_generate.py (text to video, without its "ret steps" mode): the 1.3B set for a
  // 1536-wide model, the 14B set otherwise (Wan2.2 A14B's experts have 14B's shape). 0.05 is the mildest
  // setting its README publishes (1.3B, about 1.5x).
  std::vector<double> teacache_coefficients(const ModelFolder& m) const override {
    if (m.wan->transformer.inner_dim() <= 1536)
      return {2.39676752e+03, -1.31110545e+03, 2.01331979e+02, -8.29855975e+00, 1.37887774e-01};
    return {-5784.54975374, 5449.50911966, -1811.16591783, 256.27178429, -13.02252404};
  }
  double teacache_threshold() const override { return 0.05; }
  bool calls_per_guidance_branch() const override { return true; }  // WanPipeline's two calls a step
  // Per latent token: self-attention's q/k/v/out (4 D^2), cross-attention's q and out (2 D^2; its keys and
  // values are the text's), the feed-forward (2 D ffn).
  double gemm_flops_per_token(const ModelFolder& m) const override {
    const auto& t = m.wan->transformer;
    const double D = t.inner_dim();
    return 2 * (6 * D * D + 2 * D * t.ffn_dim);
  }
  double attention_flops_per_pair(const ModelFolder& m) const override { return 4.0 * m.wan->transformer.inner_dim(); }
  bool joint_text() const override { return false; }  // the text is attended to by cross-attention
  // Counted on our block (tests/test_op_counts), in values: its norms and modulation run in float32, as
  // diffusers', so a bfloat16 run moves more bytes than these count.
  BlockCosts block_costs(const ModelFolder& m) const override {
    BlockCosts b;
    b.ops_per_block = 114;
    b.values_per_width = 66;
    b.values_per_hidden = 2;
    b.hidden = m.wan->transformer.ffn_dim;
    b.ops_per_call = 40;
    b.ops_per_step = 37;
    return b;
  }
  // The causal 3D decoder's levels from full size down, num_res_blocks + 1 resnets of 3x3x3 convolutions.
  double vae_flops_per_pixel(const ModelFolder& m) const override {
    if (!m.wan->vae) return 0;
    const auto& v = *m.wan->vae;
    std::vector<int> widths;
    for (int d : v.dim_mult) widths.push_back(v.decoder_base_dim * d);
    return decoder_flops_per_pixel(widths, v.num_res_blocks + 1, 27);
  }

  void apply_defaults(JobSpec& job, const ModelFolder& m) const override {
    // WanPipeline.__call__'s defaults; 16 fps is what its examples export with.
    if (job.height == 0) job.height = 480;
    if (job.width == 0) job.width = 832;
    if (job.num_frames == 0) job.num_frames = 81;
    if (job.fps == 0) job.fps = 16;
    if (job.max_sequence_length == 0) job.max_sequence_length = 512;
    if (job.num_inference_steps == 0) job.num_inference_steps = 50;
    if (std::isnan(job.guidance_scale)) job.guidance_scale = m.family == Family::Wan22 ? 4.0 : 5.0;
    if (m.family == Family::Wan22 && std::isnan(job.guidance_scale_2)) job.guidance_scale_2 = job.guidance_scale;
    // AutoencoderKLWan's enable_tiling() defaults.
    if (job.tile_sample_min_height == 0) job.tile_sample_min_height = 256;
    if (job.tile_sample_min_width == 0) job.tile_sample_min_width = 256;
  }

  void validate(const JobSpec& job, const ModelFolder& m, std::vector<Problem>& out) const override {
    const int s = m.vae_scale_spatial();
    const std::string why = "the VAE's " + std::to_string(s) + "x times the patch size " +
                            std::to_string(m.wan->transformer.patch_size[1]);
    check_multiple("height", job.height, pixel_step(m), why, out);
    check_multiple("width", job.width, pixel_step(m), why, out);
    const int tc = m.vae_scale_temporal();
    if (job.num_frames <= 0 || (job.num_frames - 1) % tc != 0) {
      const int below = job.num_frames <= 1 ? 1 : (job.num_frames - 1) / tc * tc + 1;
      out.push_back({"num_frames", "--num_frames " + std::to_string(job.num_frames) + ": must be " +
                                       std::to_string(tc) + "k+1 (the VAE compresses time " + std::to_string(tc) +
                                       "x, keeping the first frame); " + std::to_string(below) + " or " +
                                       std::to_string(below + tc) + " would work"});
    }
    if (job.max_sequence_length < 1 || job.max_sequence_length > 512)
      out.push_back({"max_sequence_length", "--max_sequence_length " + std::to_string(job.max_sequence_length) +
                                                ": must be between 1 and 512 (umT5's length in Wan)"});
    if (m.family == Family::Wan22 && (job.use_magcache || !job.magcache_calibrate.empty()))
      out.push_back({job.use_magcache ? "use_magcache" : "magcache_calibrate",
                     "MagCache's ratios are calibrated for one transformer, and Wan2.2 steps through two experts; "
                     "use --use_fbcache or --use_teacache instead"});
    if (job.use_dynamic_cfg)
      out.push_back({"use_dynamic_cfg", "--use_dynamic_cfg: CogVideoX's guidance rule; Wan guides with a "
                                        "constant scale; leave it out"});
    if (job.vae_tiling)
      for (auto [field, v] : {std::pair{"tile_sample_min_height", job.tile_sample_min_height},
                              std::pair{"tile_sample_min_width", job.tile_sample_min_width}})
        check_multiple(field, v, 4 * s, "whole latent pixels, and a quarter of a tile overlaps its neighbour", out);
  }

  LatentGeometry geometry(const JobSpec& job, const ModelFolder& m) const override {
    const auto& t = m.wan->transformer;
    LatentGeometry g;
    g.channels_first = true;
    g.frames = (job.num_frames - 1) / m.vae_scale_temporal() + 1;
    g.padded_frames = g.frames;
    g.channels = t.in_channels;
    g.height = job.height / m.vae_scale_spatial();
    g.width = job.width / m.vae_scale_spatial();
    g.latent_tokens =
        int64_t(g.frames / t.patch_size[0]) * (g.height / t.patch_size[1]) * (g.width / t.patch_size[2]);
    g.text_tokens = job.max_sequence_length;
    return g;
  }

  MemoryEstimate memory(const ParallelConfig& p, const JobSpec& job, const ModelFolder& m, int b) const override {
    const auto& t = m.wan->transformer;
    const double D = t.inner_dim();
    // Per block: self- and cross-attention's q/k/v/out (8 D^2), the feed-forward (2 D ffn), the modulation
    // table and norms (about 10 D). Once: the patch embedding and head, the text MLP, the time MLP and its
    // 6D projection.
    const double block = 8 * D * D + 2 * D * t.ffn_dim + 10 * D;
    const double other = 2.0 * t.in_channels * t.patch_volume() * D + t.text_dim * D + D * D + t.freq_dim * D +
                         D * D + 6 * D * D;
    MemoryEstimate e;
    e.transformer_gib = transformer_gib(p, job, m, block, other, D, b);
    if (m.wan->vae && job.height > 0) {
      // The decoder's widest full-size level, a few copies, for a batch of four frames and its two-frame cache.
      const auto dims = m.wan->vae->decoder_dims();
      e.vae_gib = 6.0 * 4 * job.height * job.width * dims.back() * b / kGiB + 0.5;
      if (p.use_parallel_vae) e.vae_gib = (e.vae_gib - 0.5) / p.world_size() + 0.5;
    }
    return e;
  }
};

}  // namespace

const FamilyRules& wan_rules() {
  static const WanRules rules;
  return rules;
}

}  // namespace studio::plan

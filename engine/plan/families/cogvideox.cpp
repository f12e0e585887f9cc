// CogVideoX (1.0 with sin-cos positions or RoPE, 1.5 with temporal patches), CogVideoXPipeline of
// diffusers 0.32.2: its row in the family registry.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include "plan/families/cogvideox_config.h"
#include "plan/family.h"
#include "plan/single_file.h"
#include "plan/json_fields.h"
#include "plan/parallel.h"

namespace studio::plan {

namespace {

const CogVideoXParts& cog(const ModelFolder& m) { return m.parts_as<CogVideoXParts>(); }

class CogVideoX final : public Family {
 public:
  const char* name() const override { return "CogVideoX"; }
  std::vector<std::string> pipelines() const override {
    return {"CogVideoXPipeline", "CogVideoXImageToVideoPipeline"};
  }
  const char* class_prefix() const override { return "CogVideoX"; }
  // Download sizes: the Hub's file listings (GB of 10^9 bytes) over what download_repo fetches. GPU memory:
  // the model card's single-GPU figure.
  std::vector<KnownRepo> known_repos() const override {
    return {
        // transformer 3.4 + text_encoder (T5-XXL) 9.5 + vae (fp32) 0.86: the repo's listing says 13.8 GB.
        {"cogvideox-2b", "CogVideoX-2b", "THUDM/CogVideoX-2b", 13.8, 18,
         "FP16, everything on the GPU (model card: 18 GB with SAT; 12.5 GB with diffusers' CPU offload and VAE "
         "tiling)"},
        // transformer 9.93 + 1.22; T5-XXL as CogVideoX-2b's (9.5); the VAE in bf16 (0.43; 2b's is now fp32).
        {"cogvideox-5b", "CogVideoX-5b", "THUDM/CogVideoX-5b", 21.1, 26,
         "BF16, everything on the GPU (model card: 26 GB with SAT; 20.7 GB with diffusers' CPU offload and VAE "
         "tiling)"},
        // transformer 4.98 + 4.95 + 1.22 (Kijai/CogVideoX-5b-1.5's listing of the same 5B transformer); T5-XXL
        // and VAE as CogVideoX-5b's.
        {"cogvideox-1.5", "CogVideoX1.5-5B", "THUDM/CogVideoX1.5-5B", 21.1, 9,
         "BF16 with diffusers' CPU offload and VAE tiling: the model card's minimum; more with everything on the "
         "GPU"},
        // Image-to-video: the 5B transformers with twice the input channels (the picture's latents) and, for
        // 1.0, a learned position table: sizes estimated as their text-to-video twins', not read off the Hub.
        {"cogvideox-5b-i2v", "CogVideoX-5b-I2V", "THUDM/CogVideoX-5b-I2V", 21.1, 26,
         "BF16, everything on the GPU (as CogVideoX-5b's model card; estimated)", false, true},
        {"cogvideox-1.5-i2v", "CogVideoX1.5-5B-I2V", "THUDM/CogVideoX1.5-5B-I2V", 21.1, 9,
         "BF16 with diffusers' CPU offload and VAE tiling (as CogVideoX1.5-5B's model card; estimated)", false, true},
    };
  }

  void read_parts(ModelFolder& m, const Fields&) const override {
    const std::string tcfg = part_path(m, "transformer", "config.json"),
                      scfg = part_path(m, "scheduler", "scheduler_config.json"), vcfg = part_path(m, "vae", "config.json");
    auto parts = std::make_shared<CogVideoXParts>();
    parts->transformer = parse_cogvideox_transformer_config(read_text_file(tcfg), tcfg);
    parts->scheduler = parse_cogvideox_scheduler_config(read_text_file(scfg), scfg);
    if (std::filesystem::exists(vcfg)) parts->vae = parse_cogvideox_vae_config(read_text_file(vcfg), vcfg);
    const auto& t = parts->transformer;
    if (t.in_channels > t.out_channels && t.patch_size_t)
      m.variant = {"cogvideox-1.5-i2v", "CogVideoX 1.5 image-to-video (CogVideoX1.5-5B-I2V)"};
    else if (t.in_channels > t.out_channels)
      m.variant = {"cogvideox-5b-i2v", "CogVideoX image-to-video (1.0, CogVideoX-5b-I2V)"};
    else if (t.patch_size_t) m.variant = {"cogvideox-1.5", "CogVideoX 1.5 (temporal patches, e.g. CogVideoX1.5-5B)"};
    else if (t.use_rotary_positional_embeddings) m.variant = {"cogvideox-5b", "CogVideoX (1.0, 3D RoPE, e.g. CogVideoX-5b)"};
    else m.variant = {"cogvideox-2b", "CogVideoX (1.0, 3D sin-cos positions, e.g. CogVideoX-2b)"};
    m.parts = parts;
  }
  std::pair<std::string, int> t5_width(const ModelFolder& m) const override {
    return {"text_embed_dim", cog(m).transformer.text_embed_dim};
  }
  bool has_vae(const ModelFolder& m) const override { return cog(m).vae.has_value(); }
  bool takes_image(const ModelFolder& m) const override {
    return cog(m).transformer.in_channels > cog(m).transformer.out_channels;
  }
  int vae_scale_spatial(const ModelFolder& m) const override { return cog(m).vae ? cog(m).vae->spatial_compression : 8; }
  int vae_scale_temporal(const ModelFolder& m) const override {
    return cog(m).vae ? cog(m).vae->temporal_compression_ratio : 4;
  }
  std::vector<EncoderInput> encoder_inputs(const JobSpec&) const override {
    return {{TextEncoder::T5, "prompt"}, {TextEncoder::T5, "negative_prompt"}};
  }

  std::string sampler_name(const ModelFolder& m) const override { return plan::sampler_name(cog(m).scheduler.kind); }
  bool makes_video() const override { return true; }
  bool classifier_free() const override { return true; }
  bool dynamic_cfg() const override { return true; }
  bool names_lora_module(const std::string& m) const override {
    return starts_with(m, "transformer.blocks.") && m.find(".attn1.") != std::string::npos;
  }
  bool takes_prompt_2() const override { return false; }
  int pixel_step(const ModelFolder& m) const override { return m.vae_scale_spatial() * cog(m).transformer.patch_size; }
  int attention_heads(const ModelFolder& m) const override { return cog(m).transformer.num_attention_heads; }
  int hidden_size(const ModelFolder& m) const override { return cog(m).transformer.inner_dim(); }
  int blocks(const ModelFolder& m) const override { return cog(m).transformer.num_layers; }
  int train_steps(const ModelFolder& m) const override { return cog(m).scheduler.num_train_timesteps; }
  // TeaCache4CogVideoX1.5/teacache_sample_video.py's coefficients_dict (text to video); 0.1 is the mildest
  // setting its help names ("0.1 for 1.3x speedup").
  std::vector<double> teacache_coefficients(const ModelFolder& m) const override {
    if (m.variant.id == "cogvideox-2b")
      return {-3.10658903e+01, 2.54732368e+01, -5.92380459e+00, 1.75769064e+00, -3.61568434e-03};
    if (m.variant.id == "cogvideox-5b")
      return {-1.53880483e+03, 8.43202495e+02, -1.34363087e+02, 7.97131516e+00, -5.23162339e-02};
    return {2.50210439e+02, -1.65061612e+02, 3.57804877e+01, -7.81551492e-01, 3.58559703e-02};
  }
  double teacache_threshold() const override { return 0.1; }
  // q/k/v/out (4 D^2) and the feed-forward (8 D^2) per token; the adaptive norms' linears act once per
  // sample, not per token.
  double gemm_flops_per_token(const ModelFolder& m) const override {
    const double D = cog(m).transformer.inner_dim();
    return 2 * 12 * D * D;
  }
  double attention_flops_per_pair(const ModelFolder& m) const override { return 4.0 * cog(m).transformer.inner_dim(); }
  // Counted on our blocks (tests/test_op_counts): the rotary embedding of q and k (CogVideoX-5B, 1.5) adds
  // 30 operations and 18 values per token and width.
  BlockCosts block_costs(const ModelFolder& m) const override {
    const bool rope = cog(m).transformer.use_rotary_positional_embeddings;
    BlockCosts b;
    b.ops_per_block = rope ? 80 : 50;
    b.values_per_width = rope ? 37.8 : 19.9;
    b.values_per_hidden = 2;  // the GELU reads and writes the feed-forward's hidden values
    b.hidden = 4 * int64_t(cog(m).transformer.inner_dim());
    b.ops_per_call = 39;
    b.ops_per_step = sampler_name(m) == "CogVideoXDPMScheduler" ? 41 : 32;  // DPM's noise and history; DDIM
    return b;
  }
  double vae_decode_flops(const ModelFolder& m, int height, int width, int frames) const override {
    return cog(m).vae ? cog(m).vae->decoder_flops(height, width, frames) : 0;
  }

  const char* gguf_architecture() const override { return "cogvideox"; }

  void apply_defaults(JobSpec& job, const ModelFolder& m) const override {
    const auto& t = cog(m).transformer;
    // CogVideoX 1.5's released configs give sample sizes that diffusers' pipelines turn into a default no GPU runs
    // and the model was not trained for: past the largest side its model card allows, the card's size instead.
    // Other sample sizes are the model's own (CogVideoX 1.0's).
    const int s = m.vae_scale_spatial();
    const bool card = t.patch_size_t > 0 && std::max(t.sample_height, t.sample_width) * s > 1360;
    if (job.height == 0) job.height = card ? 768 : t.sample_height * s;
    if (job.width == 0) job.width = card ? 1360 : t.sample_width * s;
    if (job.num_frames == 0) job.num_frames = t.sample_frames;
    if (job.fps == 0) job.fps = cog(m).transformer.patch_size_t ? 16 : 8;  // CogVideoX 1.5 exports at 16
    if (job.max_sequence_length == 0) job.max_sequence_length = t.max_text_seq_length;
    if (job.num_inference_steps == 0) job.num_inference_steps = 50;
    if (std::isnan(job.guidance_scale)) job.guidance_scale = 6.0;
    if (job.tile_sample_min_height == 0) job.tile_sample_min_height = 240;  // half of 480 x 720, as diffusers
    if (job.tile_sample_min_width == 0) job.tile_sample_min_width = 360;
  }

  void validate(const JobSpec& job, const ModelFolder& m, std::vector<Problem>& out) const override {
    const auto& t = cog(m).transformer;
    const int s = m.vae_scale_spatial();
    const std::string why = "the VAE's " + std::to_string(s) + "x times the patch size " + std::to_string(t.patch_size);
    check_multiple("height", job.height, pixel_step(m), why, out);
    check_multiple("width", job.width, pixel_step(m), why, out);
    // CogVideoX-5B-I2V's learned positions cover one size (diffusers refuses others) and the text slots.
    if (t.use_learned_positional_embeddings) {
      for (auto [field, v, want] : {std::tuple{"height", job.height, t.sample_height * s},
                                    std::tuple{"width", job.width, t.sample_width * s}})
        if (v != want)
          out.push_back({field, std::string("--") + field + " " + std::to_string(v) + ": this model's learned "
                                "positions cover " + std::to_string(t.sample_width * s) + " x " +
                                std::to_string(t.sample_height * s) + " only; use --" + field + " " + std::to_string(want)});
      if (job.max_sequence_length != t.max_text_seq_length)
        out.push_back({"max_sequence_length", "--max_sequence_length " + std::to_string(job.max_sequence_length) +
                                                  ": this model's learned positions cover exactly " +
                                                  std::to_string(t.max_text_seq_length) + " text tokens"});
    }
    if (job.use_teacache && takes_image(m))
      out.push_back({"use_teacache", "--use_teacache: TeaCache publishes no coefficients for CogVideoX's image-to-video "
                                     "models; use --use_fbcache or --use_magcache"});
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
    check_frames(job.num_frames, tc, out);
    if (job.max_sequence_length < 1 || job.max_sequence_length > 4096)
      out.push_back({"max_sequence_length", "--max_sequence_length " + std::to_string(job.max_sequence_length) +
                                                ": must be between 1 and 4096 (226 is CogVideoX's)"});
    else if (!t.use_rotary_positional_embeddings && job.max_sequence_length != t.max_text_seq_length)
      out.push_back({"max_sequence_length", "--max_sequence_length " + std::to_string(job.max_sequence_length) +
                                                ": this model (3D sin-cos positions) needs exactly its "
                                                "max_text_seq_length, " + std::to_string(t.max_text_seq_length)});
  }

  LatentGeometry geometry(const JobSpec& job, const ModelFolder& m) const override {
    const auto& t = cog(m).transformer;
    LatentGeometry g;
    g.frames = (job.num_frames - 1) / m.vae_scale_temporal() + 1;
    g.padded_frames = g.frames;
    const int pt = t.patch_size_t.value_or(1);
    if (g.frames % pt != 0) g.padded_frames += pt - g.frames % pt;  // the 1.5 pipeline pads at the start
    g.channels = t.out_channels;
    g.height = job.height / m.vae_scale_spatial();
    g.width = job.width / m.vae_scale_spatial();
    g.latent_tokens = int64_t(g.padded_frames / pt) * (g.height / t.patch_size) * (g.width / t.patch_size);
    g.text_tokens = t.max_text_seq_length;
    return g;
  }

  MemoryEstimate memory(const ParallelConfig& p, const JobSpec& job, const ModelFolder& m, int b) const override {
    const auto& t = cog(m).transformer;
    const double D = t.inner_dim(), E = t.time_embed_dim;
    // Per block: two adaptive norms (6D from E each), q/k/v/out (4 D^2), feed-forward (8 D^2).
    const double block = 12 * D * E + 12 * D * D;
    const double other = t.text_embed_dim * D + 2 * D * E + 2 * E * D + D * t.in_channels * t.patch_size * t.patch_size * 2;
    MemoryEstimate e;
    e.transformer_gib = transformer_gib(p, job, m, block, other, 4 * D * D, D, b);  // widest: the feed-forward's
    e.block_weight_gib = block_weight_gib(job, m, block, other, b);
    if (cog(m).vae && job.height > 0) {
      // One batch of 8 frames at full size through the widest full-size blocks (measured: docs/performance.md).
      const auto& v = *cog(m).vae;
      const double top = v.block_out_channels.size() > 1 ? v.block_out_channels[v.block_out_channels.size() - 2] : 128;
      e.vae_gib = 8.0 * job.height * job.width * (2 * top + 2 * v.block_out_channels.front()) * b / kGiB + 0.5;
      if (p.use_parallel_vae) e.vae_gib = (e.vae_gib - 0.5) / p.world_size() + 0.5;
    }
    return e;
  }
};

}  // namespace

const Family& cogvideox_family() {
  static const CogVideoX row;
  return row;
}

}  // namespace studio::plan

// FLUX.1 (dev, with a guidance embedding; schnell, without): the rules of its jobs, as FluxPipeline of
// diffusers v0.32.2 runs it. Images: one frame, no fps, no classifier-free guidance.
#include <algorithm>
#include <cmath>

#include <filesystem>

#include "plan/families/flux_config.h"
#include "plan/families/flux_single_file.h"
#include "plan/family.h"
#include "plan/single_file.h"
#include "plan/json_fields.h"
#include "plan/parallel.h"

namespace studio::plan {

namespace {

const FluxParts& flux(const ModelFolder& m) { return m.parts_as<FluxParts>(); }

class Flux final : public Family {
 public:
  const char* name() const override { return "FLUX.1"; }
  std::vector<std::string> pipelines() const override { return {"FluxPipeline"}; }
  const char* class_prefix() const override { return "Flux"; }
  // Download sizes: the Hub's file listings (GB of 10^9 bytes) over what download_repo fetches (the folders
  // model_index.json names, never the single-file checkpoints beside them: flux1-*.safetensors,
  // ae.safetensors). The model card gives no memory figure: the bf16 transformer's weights, a floor.
  std::vector<KnownRepo> known_repos() const override {
    // transformer 23.8 (bf16, 12B) + text_encoder_2 (T5-XXL) 9.52 + text_encoder (CLIP-L) 0.25 + vae 0.17.
    const char* note = "the bf16 transformer's weights alone (the model card gives no figure); activations come on top";
    return {{"flux-dev", "FLUX.1-dev", "black-forest-labs/FLUX.1-dev", 33.7, 24, note, true},
            {"flux-schnell", "FLUX.1-schnell", "black-forest-labs/FLUX.1-schnell", 33.7, 24, note, false}};
  }

  void read_parts(ModelFolder& m, const Fields&) const override {
    const std::string tcfg = part_path(m, "transformer", "config.json"),
                      scfg = part_path(m, "scheduler", "scheduler_config.json"), vcfg = part_path(m, "vae", "config.json"),
                      ccfg = part_path(m, "text_encoder", "config.json");
    auto f = std::make_shared<FluxParts>();
    f->transformer = parse_flux_transformer_config(read_text_file(tcfg), tcfg);
    f->scheduler = parse_flow_match_config(read_text_file(scfg), scfg);
    if (std::filesystem::exists(vcfg)) f->vae = parse_autoencoder_kl_config(read_text_file(vcfg), vcfg);
    if (f->vae && f->vae->latent_channels * 4 != f->transformer.in_channels)
      throw InputError(vcfg + ": latent_channels " + std::to_string(f->vae->latent_channels) +
                       " does not match the transformer's in_channels " + std::to_string(f->transformer.in_channels) +
                       " (4 x the latent channels: 2x2 packing)");
    if (std::filesystem::exists(ccfg)) f->clip = parse_clip_text_config(read_text_file(ccfg), ccfg);
    if (f->clip && f->clip->hidden_size != f->transformer.pooled_projection_dim)
      throw InputError(ccfg + ": hidden_size " + std::to_string(f->clip->hidden_size) +
                       " does not match the transformer's pooled_projection_dim " +
                       std::to_string(f->transformer.pooled_projection_dim) + " (the pooled CLIP vector's width)");
    f->has_clip_tokenizer =
        std::filesystem::exists(part_path(m, "tokenizer", "vocab.json")) &&
        std::filesystem::exists(part_path(m, "tokenizer", "merges.txt"));
    m.variant = f->transformer.guidance_embeds
                    ? Variant{"flux-dev", "FLUX.1 with guidance embedding (e.g. FLUX.1-dev)"}
                    : Variant{"flux-schnell", "FLUX.1 without guidance embedding (e.g. FLUX.1-schnell)"};
    m.parts = f;
  }
  std::pair<std::string, int> t5_width(const ModelFolder& m) const override {
    return {"joint_attention_dim", flux(m).transformer.joint_attention_dim};
  }
  bool has_vae(const ModelFolder& m) const override { return flux(m).vae.has_value(); }
  int vae_scale_spatial(const ModelFolder& m) const override {
    return flux(m).vae ? flux(m).vae->spatial_compression() : 8;
  }
  // CLIP in text_encoder/ and tokenizer/ reads the prompt; T5 in the _2 folders reads prompt_2, or the
  // prompt when there is none (FluxPipeline.encode_prompt).
  std::string t5_part() const override { return "text_encoder_2"; }
  std::string t5_tokenizer_part() const override { return "tokenizer_2"; }
  std::string clip_tokenizer_part() const override { return "tokenizer"; }
  std::vector<EncoderInput> encoder_inputs(const JobSpec& job) const override {
    return {{TextEncoder::CLIP, "prompt"}, {TextEncoder::T5, job.prompt_2.empty() ? "prompt" : "prompt_2"}};
  }
  std::vector<std::string> missing_text_parts(const ModelFolder& m) const override {
    std::vector<std::string> missing;
    if (!flux(m).has_clip_tokenizer) missing.push_back("tokenizer/ (CLIP's vocab.json, merges.txt)");
    if (!flux(m).clip) missing.push_back("text_encoder/ (CLIP)");
    for (auto& part : Family::missing_text_parts(m)) missing.push_back(part);
    return missing;
  }
  int pooled_text_width(const ModelFolder& m) const override { return flux(m).transformer.pooled_projection_dim; }

  std::string sampler_name(const ModelFolder&) const override { return "FlowMatchEulerDiscreteScheduler"; }
  bool makes_video() const override { return false; }
  bool classifier_free() const override { return false; }
  bool names_lora_module(const std::string& m) const override {
    return starts_with(m, "double.blocks.") || starts_with(m, "single.blocks.") ||
           starts_with(m, "single.transformer.blocks.") ||
           (starts_with(m, "transformer.blocks.") && m.find(".attn.") != std::string::npos);
  }
  bool takes_prompt_2() const override { return true; }
  bool takes_text_encoder_loras() const override { return true; }
  // The VAE's 8x, times the 2x2 packing.
  int pixel_step(const ModelFolder& m) const override { return m.vae_scale_spatial() * 2; }
  int attention_heads(const ModelFolder& m) const override { return flux(m).transformer.num_attention_heads; }
  int hidden_size(const ModelFolder& m) const override { return flux(m).transformer.inner_dim(); }
  int blocks(const ModelFolder& m) const override {
    return flux(m).transformer.num_layers + flux(m).transformer.num_single_layers;
  }

  int train_steps(const ModelFolder& m) const override { return flux(m).scheduler.num_train_timesteps; }
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
    const double D = flux(m).transformer.inner_dim();
    return 2 * 12 * D * D;
  }
  double attention_flops_per_pair(const ModelFolder& m) const override {
    return 4.0 * flux(m).transformer.inner_dim();
  }
  // Counted on our blocks (tests/test_op_counts): a double-stream block 119 operations and 50.1 values per
  // token and width, a single-stream one 73 and 46.7; both read and write the MLP's hidden values twice.
  BlockCosts block_costs(const ModelFolder& m) const override {
    const auto& t = flux(m).transformer;
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
  double vae_decode_flops(const ModelFolder& m, int height, int width, int frames) const override {
    return flux(m).vae ? flux(m).vae->decoder_flops(height, width, frames) : 0;
  }

  TensorRenames transformer_renames(const ModelFolder& m, const std::set<std::string>& names) const override {
    return names.count("img_in.weight") ? flux_bfl_renames(flux(m).transformer) : TensorRenames{};
  }
  TensorRenames original_layout(const ModelFolder& m) const override { return flux_bfl_renames(flux(m).transformer); }
  const char* gguf_architecture() const override { return "flux"; }

  void apply_defaults(JobSpec& job, const ModelFolder& m) const override {
    const bool dev = flux(m).transformer.guidance_embeds;
    if (job.height == 0) job.height = 128 * m.vae_scale_spatial();  // FluxPipeline: default_sample_size 128
    if (job.width == 0) job.width = 128 * m.vae_scale_spatial();
    if (job.num_frames == 0) job.num_frames = 1;
    if (job.fps == 0) job.fps = 1;
    if (job.max_sequence_length == 0) job.max_sequence_length = 512;
    // FluxPipeline says 28 for both; schnell is distilled for 4 (its model card's setting), so 4 it is.
    if (job.num_inference_steps == 0) job.num_inference_steps = dev ? 28 : 4;
    if (std::isnan(job.guidance_scale)) job.guidance_scale = dev ? 3.5 : 0.0;
    const int tile = flux(m).vae ? flux(m).vae->sample_size : 1024;  // diffusers' tile: the VAE's sample size
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
    g.channels = flux(m).transformer.in_channels / 4;
    g.height = job.height / m.vae_scale_spatial();
    g.width = job.width / m.vae_scale_spatial();
    g.latent_tokens = int64_t(g.height / 2) * (g.width / 2);
    g.text_tokens = job.max_sequence_length;
    return g;
  }

  MemoryEstimate memory(const ParallelConfig& p, const JobSpec& job, const ModelFolder& m, int b) const override {
    const auto& t = flux(m).transformer;
    const double D = t.inner_dim();
    // Double-stream blocks: two streams of modulation (6 D^2), q/k/v/out (4 D^2) and feed-forward (8 D^2);
    // single-stream blocks: modulation (3 D^2), q/k/v (3 D^2), the MLP in (4 D^2) and the joint out (5 D^2).
    const double doubles = 36 * D * D * t.num_layers, singles = 15 * D * D * t.num_single_layers;
    const double block = (doubles + singles) / std::max(1, blocks(m));
    const double other = t.in_channels * D + t.joint_attention_dim * D + 2 * 256 * D + t.pooled_projection_dim * D +
                         6 * D * D + 2 * D * D + D * t.out_channels;
    MemoryEstimate e;
    e.transformer_gib = transformer_gib(p, job, m, block, other, 6 * D * D, D, b);  // widest: a double block's modulation
    e.block_weight_gib = block_weight_gib(job, m, block, other, b);
    if (flux(m).vae && job.height > 0) {
      // The widest full-size block's activations, a few copies, for the one image.
      const auto& v = *flux(m).vae;
      e.vae_gib = 6.0 * job.height * job.width * v.block_out_channels.front() * 2 * b / kGiB + 0.3;
    }
    return e;
  }
};

}  // namespace

const Family& flux_family() {
  static const Flux row;
  return row;
}

}  // namespace studio::plan

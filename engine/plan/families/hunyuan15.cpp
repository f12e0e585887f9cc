// HunyuanVideo-1.5 text-to-video (HunyuanVideo15Pipeline of diffusers 0.42.1): the rules of its jobs. Its words
// go through Qwen2.5-VL's language model (text_encoder/) and, for the text in quotes, ByT5 (text_encoder_2/: the
// folder's "T5"); its guidance scale is the guider's (guider/guider_config.json), two transformer calls a step.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include "plan/families/hunyuan15_config.h"
#include "plan/family.h"
#include "plan/single_file.h"
#include "plan/json_fields.h"
#include "plan/parallel.h"

namespace studio::plan {

namespace {

const Hunyuan15Parts& hy(const ModelFolder& m) { return m.parts_as<Hunyuan15Parts>(); }

// HunyuanVideo15ImageProcessor's buckets: the sizes (height, width) in `step`-pixel units whose area is about
// target_size^2 and whose sides differ at most 4:1, in the reference's order; of those whose height / width
// (rounded to 5 decimals) is not beyond `aspect` on the far side of 1 (at most it for a tall picture, at least it
// for a wide one), the first nearest to it (calculate_default_height_width).
std::pair<int, int> bucket(int target_size, int step, double aspect) {
  const int n = int(std::lround(std::pow(double(target_size) / step, 2)));
  int best_h = 0, best_w = 0;
  double best = 1e9;
  for (int a = n, b = 1; a > 0;) {
    const double ratio = std::round(double(a) / b * 1e5) / 1e5, off = ratio - aspect;
    const bool side = aspect >= 1 ? off <= 0 : off >= 0;
    if (std::max(a, b) <= 4 * std::min(a, b) && side && std::abs(off) < best)
      best = std::abs(off), best_h = a * step, best_w = b * step;
    if ((b + 1) * a <= n) ++b;
    else --a;
  }
  return {best_h, best_w};
}

// image_encoder/ (SigLIP) and feature_extractor/ (its processor) of an image-to-video folder.
void read_picture_parts(const ModelFolder& m, const Fields& idx, Hunyuan15Parts& p) {
  for (const char* part : {"image_encoder", "feature_extractor"})
    if (!idx.has(part))
      idx.fail(part, "missing", "must name it: HunyuanVideo-1.5 image-to-video encodes its picture with SigLIP");
  const std::string icfg = part_path(m, "image_encoder", "config.json"),
                    pcfg = part_path(m, "feature_extractor", "preprocessor_config.json");
  p.image_encoder = parse_siglip_vision_config(read_text_file(icfg), icfg);
  p.image_processor = parse_siglip_image_processor_config(read_text_file(pcfg), pcfg);
  if (p.image_encoder->hidden_size != p.transformer.image_embed_dim)
    throw InputError(icfg + ": hidden_size " + std::to_string(p.image_encoder->hidden_size) + " does not match the "
                     "transformer's image_embed_dim " + std::to_string(p.transformer.image_embed_dim));
  if (p.image_processor->height != p.image_encoder->image_size || p.image_processor->width != p.image_encoder->image_size)
    throw InputError(pcfg + ": size " + std::to_string(p.image_processor->width) + " x " +
                     std::to_string(p.image_processor->height) + " is not the image encoder's image_size " +
                     std::to_string(p.image_encoder->image_size));
}

class Hunyuan15 final : public Family {
 public:
  const char* name() const override { return "HunyuanVideo-1.5"; }
  std::vector<std::string> pipelines() const override {
    return {"HunyuanVideo15Pipeline", "HunyuanVideo15ImageToVideoPipeline"};
  }
  const char* class_prefix() const override { return "HunyuanVideo15"; }
  // The converted folders hunyuanvideo-community publishes (HunyuanVideo-1.5-Diffusers-<size>_<task>[_distilled]:
  // the CFG-distilled ones differ in their guider's scale only). Sizes are estimated from the parameter counts in
  // bf16 (transformer 8.3B, Qwen2.5-VL-7B's language model 7.1B, ByT5 and the VAE under 1 GB together), not
  // measured. The 480p I2V step-distilled checkpoint is left out: its transformer's second timestep
  // (use_meanflow) is not supported.
  std::vector<KnownRepo> known_repos() const override {
    const char* note = "the bf16 transformer's weights alone (8.3B parameters), a floor; the text encoder runs before it";
    std::vector<KnownRepo> out;
    for (const std::string tail : {"480p_t2v", "720p_t2v", "480p_t2v_distilled", "480p_i2v", "720p_i2v",
                                   "480p_i2v_distilled", "720p_i2v_distilled"}) {
      const std::string size = tail.substr(0, 4), task = tail.substr(5, 3);
      const bool i2v = task == "i2v", distilled = tail.size() > 8;
      out.push_back({"hunyuan15-" + task + "-" + size,
                     "HunyuanVideo-1.5 " + size + (i2v ? " I2V" : " T2V") + (distilled ? " CFG-distilled" : ""),
                     "hunyuanvideo-community/HunyuanVideo-1.5-Diffusers-" + tail, i2v ? 33.0 : 32.0, i2v ? 18.0 : 17.0,
                     note, false, i2v});
    }
    return out;
  }

  void read_parts(ModelFolder& m, const Fields& idx) const override {
    const std::string tcfg = part_path(m, "transformer", "config.json"),
                      scfg = part_path(m, "scheduler", "scheduler_config.json"), vcfg = part_path(m, "vae", "config.json"),
                      gcfg = part_path(m, "guider", "guider_config.json"), qcfg = part_path(m, "text_encoder", "config.json");
    auto p = std::make_shared<Hunyuan15Parts>();
    p->transformer = parse_hunyuan15_transformer_config(read_text_file(tcfg), tcfg);
    p->scheduler = parse_flow_match_config(read_text_file(scfg), scfg);
    if (std::filesystem::exists(vcfg)) p->vae = parse_hunyuan15_vae_config(read_text_file(vcfg), vcfg);
    if (p->vae && p->vae->latent_channels != p->transformer.out_channels)
      throw InputError(vcfg + ": latent_channels " + std::to_string(p->vae->latent_channels) +
                       " does not match the transformer's out_channels " + std::to_string(p->transformer.out_channels));
    if (!idx.has("guider")) idx.fail("guider", "missing", "must name the guider (guider/guider_config.json holds the scale)");
    p->guidance_scale = parse_hunyuan15_guidance_scale(read_text_file(gcfg), gcfg);
    if (std::filesystem::exists(qcfg)) p->qwen = parse_llm_text_config(read_text_file(qcfg), qcfg);
    if (p->qwen && !p->qwen->has_hidden_state(kQwenHiddenState))
      throw InputError(qcfg + ": num_hidden_layers " + std::to_string(p->qwen->num_hidden_layers) + " is too few: "
                       "the pipeline reads hidden_states[" + std::to_string(kQwenHiddenState) + "], which the language "
                       "model has with at least " + std::to_string(-kQwenHiddenState - 1) + " layers");
    if (p->qwen && p->qwen->hidden_size != p->transformer.text_embed_dim)
      throw InputError(qcfg + ": hidden_size " + std::to_string(p->qwen->hidden_size) + " does not match the "
                       "transformer's text_embed_dim " + std::to_string(p->transformer.text_embed_dim));
    // The tokenizer reads tokenizer.json alone (vocab.json and merges.txt beside it are not needed).
    p->has_qwen_tokenizer = std::filesystem::exists(part_path(m, "tokenizer", "tokenizer.json"));
    if (p->image_to_video()) read_picture_parts(m, idx, *p);
    // The size the checkpoint was trained for: its default video's area is about target_size^2.
    const int target = p->transformer.target_size;
    const std::string task = p->image_to_video() ? "i2v" : "t2v",
                      size = target == 640 ? "480p" : target == 960 ? "720p" : std::to_string(target) + "px";
    m.variant = {"hunyuan15-" + task + "-" + size,
                 "HunyuanVideo-1.5 " + std::string(p->image_to_video() ? "image-to-video " : "text-to-video ") + size +
                     (p->guidance_scale > 1 ? " (e.g. HunyuanVideo-1.5-Diffusers-" + size + "_" + task + ")"
                                            : ", CFG-distilled")};
    m.parts = p;
  }
  std::pair<std::string, int> t5_width(const ModelFolder& m) const override {
    return {"text_embed_2_dim", hy(m).transformer.text_embed_2_dim};
  }
  bool has_vae(const ModelFolder& m) const override { return hy(m).vae.has_value(); }
  int vae_scale_spatial(const ModelFolder& m) const override { return hy(m).vae ? hy(m).vae->spatial_compression_ratio : 16; }
  int vae_scale_temporal(const ModelFolder& m) const override {
    return hy(m).vae ? hy(m).vae->temporal_compression_ratio : 4;
  }

  // ByT5 in the _2 folders is the folder's T5; Qwen in text_encoder/ and tokenizer/ reads every text too.
  std::string t5_part() const override { return "text_encoder_2"; }
  std::string t5_tokenizer_part() const override { return "tokenizer_2"; }
  const char* t5_name() const override { return "ByT5"; }
  std::vector<EncoderInput> encoder_inputs(const JobSpec&) const override {
    return {{TextEncoder::Qwen, "prompt"}, {TextEncoder::T5, "prompt"}, {TextEncoder::Qwen, "negative_prompt"},
            {TextEncoder::T5, "negative_prompt"}};
  }
  std::vector<std::string> missing_text_parts(const ModelFolder& m) const override {
    std::vector<std::string> missing;
    if (!hy(m).has_qwen_tokenizer) missing.push_back("tokenizer/ (Qwen's tokenizer.json)");
    if (!hy(m).qwen) missing.push_back("text_encoder/ (Qwen2.5-VL's language model)");
    if (!m.text_encoder) missing.push_back("text_encoder_2/ (ByT5)");
    return missing;
  }

  // The checkpoints' two sizes (target_size 640 and 960): the one that is not the folder's default.
  std::vector<SizePreset> size_presets(const ModelFolder& m) const override {
    const auto [h, w] = bucket(hy(m).transformer.target_size, 16, 9.0 / 16.0);
    std::vector<SizePreset> out;
    for (const SizePreset& p : {SizePreset{"480p", 848, 480}, SizePreset{"720p", 1280, 720}})
      if (p.width != w || p.height != h) out.push_back(p);
    return out;
  }
  bool takes_image(const ModelFolder& m) const override { return hy(m).image_to_video(); }
  bool crops_picture(const ModelFolder& m) const override { return hy(m).image_to_video(); }
  std::pair<int, int> size_for_picture(const ModelFolder& m, int width, int height) const override {
    if (!hy(m).image_to_video() || width < 1 || height < 1) return {0, 0};
    const auto [h, w] = bucket(hy(m).transformer.target_size, m.vae_scale_spatial(), double(height) / width);
    return {w, h};
  }

  std::string sampler_name(const ModelFolder&) const override { return "FlowMatchEulerDiscreteScheduler"; }
  bool makes_video() const override { return true; }
  bool classifier_free() const override { return true; }
  bool names_lora_module(const std::string& m) const override {
    return (starts_with(m, "transformer.blocks.") && m.find(".attn.") != std::string::npos) ||
           starts_with(m, "context.embedder.token.refiner.");
  }
  bool takes_prompt_2() const override { return false; }
  int pixel_step(const ModelFolder& m) const override { return m.vae_scale_spatial(); }
  int attention_heads(const ModelFolder& m) const override { return hy(m).transformer.num_attention_heads; }
  int hidden_size(const ModelFolder& m) const override { return hy(m).transformer.inner_dim(); }
  int blocks(const ModelFolder& m) const override { return hy(m).transformer.num_layers; }
  int train_steps(const ModelFolder& m) const override { return hy(m).scheduler.num_train_timesteps; }
  // TeaCache has published no coefficients for HunyuanVideo-1.5 (validate refuses it).
  std::vector<double> teacache_coefficients(const ModelFolder&) const override { return {}; }
  double teacache_threshold() const override { return 0.1; }
  bool calls_per_guidance_branch() const override { return true; }  // the guider's two calls a step
  bool branch_texts_differ() const override { return true; }
  // Per token, a dual-stream block's own stream: q/k/v/out 4 D^2 and the feed-forward 8 D^2 (FLUX.1's double block).
  double gemm_flops_per_token(const ModelFolder& m) const override {
    const double D = hy(m).transformer.inner_dim();
    return 2 * (4 + 2 * hy(m).transformer.mlp_ratio) * D * D;
  }
  double attention_flops_per_pair(const ModelFolder& m) const override { return 4.0 * hy(m).transformer.inner_dim(); }
  // The block is FLUX.1's double-stream block (models/dual_stream_block.*): its counts (tests/test_op_counts).
  BlockCosts block_costs(const ModelFolder& m) const override {
    BlockCosts b;
    b.ops_per_block = 119;
    b.values_per_width = 50.1;
    b.values_per_hidden = 2;
    b.hidden = hy(m).transformer.mlp_dim();
    b.ops_per_call = 70;
    b.ops_per_step = 24;
    return b;
  }
  double vae_decode_flops(const ModelFolder& m, int height, int width, int frames) const override {
    return hy(m).vae ? hy(m).vae->decoder_flops(height, width, frames) : 0;
  }
  const char* gguf_architecture() const override { return "hunyuan-video-1.5"; }  // no GGUF layout is read yet

  void apply_defaults(JobSpec& job, const ModelFolder& m) const override {
    // The reference's default (from words): the bucket nearest 16:9 that is not wider.
    const auto [height, width] = bucket(hy(m).transformer.target_size, 16, 9.0 / 16.0);
    if (job.height == 0) job.height = height;
    if (job.width == 0) job.width = width;
    if (job.num_frames == 0) job.num_frames = 121;
    if (job.fps == 0) job.fps = 24;
    if (job.max_sequence_length == 0) job.max_sequence_length = 1000;  // the pipeline's Qwen tokens
    if (job.num_inference_steps == 0) job.num_inference_steps = 50;
    if (std::isnan(job.guidance_scale)) job.guidance_scale = hy(m).guidance_scale;
    if (job.tile_sample_min_height == 0) job.tile_sample_min_height = 256;  // the VAE's tiles, as diffusers'
    if (job.tile_sample_min_width == 0) job.tile_sample_min_width = 256;
  }

  void validate(const JobSpec& job, const ModelFolder& m, std::vector<Problem>& out) const override {
    const int s = m.vae_scale_spatial();
    check_multiple("height", job.height, s, "the VAE's " + std::to_string(s) + "x", out);
    check_multiple("width", job.width, s, "the VAE's " + std::to_string(s) + "x", out);
    check_frames(job.num_frames, m.vae_scale_temporal(), out);
    if (job.max_sequence_length != 1000)
      out.push_back({"max_sequence_length", "--max_sequence_length " + std::to_string(job.max_sequence_length) +
                                                ": HunyuanVideo-1.5 reads 1000 Qwen tokens (and 256 ByT5 bytes); "
                                                "leave it out"});
    if (job.use_teacache)
      out.push_back({"use_teacache", "--use_teacache: TeaCache has published no coefficients for HunyuanVideo-1.5; use "
                                     "--use_fbcache or --use_magcache instead"});
    if (job.use_dynamic_cfg)
      out.push_back({"use_dynamic_cfg", "--use_dynamic_cfg: CogVideoX's guidance rule; HunyuanVideo-1.5 guides with a "
                                        "constant scale; leave it out"});
    if (job.vae_tiling)
      for (auto [field, v] : {std::pair{"tile_sample_min_height", job.tile_sample_min_height},
                              std::pair{"tile_sample_min_width", job.tile_sample_min_width}})
        check_multiple(field, v, 4 * s, "whole latent pixels, and a quarter of a tile overlaps its neighbour", out);
  }

  LatentGeometry geometry(const JobSpec& job, const ModelFolder& m) const override {
    LatentGeometry g;
    g.channels_first = true;
    g.frames = (job.num_frames - 1) / m.vae_scale_temporal() + 1;
    g.padded_frames = g.frames;
    g.channels = hy(m).transformer.out_channels;
    g.height = job.height / m.vae_scale_spatial();
    g.width = job.width / m.vae_scale_spatial();
    g.latent_tokens = int64_t(g.frames) * g.height * g.width;
    // At most; the ByT5 rows (up to 256) come on top, and a picture's SigLIP rows.
    g.text_tokens = job.max_sequence_length + (hy(m).image_encoder ? hy(m).image_encoder->tokens() : 0);
    return g;
  }

  MemoryEstimate memory(const ParallelConfig& p, const JobSpec& job, const ModelFolder& m, int b) const override {
    const auto& t = hy(m).transformer;
    const double D = t.inner_dim(), T = t.text_embed_dim, G = t.text_embed_2_dim, I = t.image_embed_dim;
    // A block: two streams of modulation (6 D^2), q/k/v/out (4 D^2) and feed-forward (2 mlp_ratio D^2). Once: the
    // patch embedding, the refiner (its blocks about 14 D^2 each, its input and time MLPs), the ByT5 projection
    // (2048 wide), the picture projection, the time MLP and the head.
    const double block = 2 * (6 + 4 + 2 * t.mlp_ratio) * D * D;
    const double other = t.in_channels * D + t.num_refiner_layers * 14 * D * D + 2 * T * D + 3 * D * D + G * 2048 +
                         2048.0 * 2048 + 2048 * D + I * I + I * D + 256 * D + D * D + 2 * D * D + D * t.out_channels;
    MemoryEstimate e;
    const double widest = std::max(6.0, t.mlp_ratio) * D * D;  // the modulation's, or the MLP's
    e.transformer_gib = transformer_gib(p, job, m, block, other, widest, D, b);
    e.block_weight_gib = block_weight_gib(job, m, block, other, b);
    if (const auto& qwen = hy(m).qwen; qwen && !job.prompt.empty())
      e.text_encoder_gib = qwen->parameters(hy(m).qwen_layers()) * b / kGiB;
    if (const auto& v = hy(m).vae; v && job.height > 0) {
      // Decoded whole (or a tile at a time): the decoder's weights, and its last level's activations, about eight
      // copies of it at once for every frame (measured on the CPU: docs/memory.md). Split by rows, each rank
      // holds its rows' share of the activations and all the weights.
      const double pixels = job.vae_tiling ? double(std::min(job.height, job.tile_sample_min_height)) *
                                                 std::min(job.width, job.tile_sample_min_width)
                                           : double(job.height) * job.width;
      const double activations = 8.0 * job.num_frames * pixels * v->block_out_channels.front() * b / kGiB;
      e.vae_gib = double(v->decoder_parameters()) * b / kGiB +
                  (p.use_parallel_vae ? activations / p.world_size() : activations);
    }
    return e;
  }
};

}  // namespace

const Family& hunyuan15_family() {
  static const Hunyuan15 row;
  return row;
}

}  // namespace studio::plan

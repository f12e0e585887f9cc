// Wan2.1 and Wan2.2 text-to-video (WanPipeline of diffusers 0.35.2): the rules of its jobs. Wan2.2 A14B has
// two experts of one shape; a run holds one at a time, so its memory is one expert's.
#include <cctype>
#include <cmath>

#include <filesystem>

#include "plan/families/wan_config.h"
#include "plan/families/wan_single_file.h"
#include "plan/family.h"
#include "plan/single_file.h"
#include "plan/json_fields.h"
#include "plan/parallel.h"

namespace studio::plan {

namespace {

const WanParts& wan(const ModelFolder& m) { return m.parts_as<WanParts>(); }

// FLF2V's learned positions (pos_embed_seq_len) cover two pictures' image tokens: it joins a first and a last
// picture, and cannot read one alone.
bool first_and_last_frame(const ModelFolder& m) { return wan(m).transformer.pos_embed_seq_len > 0; }

// transformer/ (and Wan2.2's transformer_2/), scheduler/ and vae/ of a WanPipeline folder, checked against
// each other and against model_index.json.
std::shared_ptr<WanParts> read_wan_parts(const Fields& idx, const ModelFolder& m) {
  const std::string tcfg = part_path(m, "transformer", "config.json"),
                    scfg = part_path(m, "scheduler", "scheduler_config.json");
  auto parts = std::make_shared<WanParts>();
  auto& w = *parts;
  w.transformer = parse_wan_transformer_config(read_text_file(tcfg), tcfg);
  w.scheduler = parse_unipc_config(read_text_file(scfg), scfg);
  w.transformer.expand_timesteps = idx.get<bool>("expand_timesteps", false);
  if (w.transformer.expand_timesteps && (w.transformer.in_channels != w.transformer.out_channels || w.transformer.patch_size[0] != 1))
    throw InputError(tcfg + ": expand_timesteps (model_index.json) needs in_channels = out_channels and a patch_size "
                     "of one frame (Wan2.2 TI2V-5B's [1, 2, 2]): its picture replaces the first latent frame");
  const bool second = idx.has("transformer_2") && idx.dump("transformer_2") != "[null,null]";
  if (second) {
    const std::string t2cfg = part_path(m, "transformer_2", "config.json");
    w.transformer_2 = parse_wan_transformer_config(read_text_file(t2cfg), t2cfg);
    if (w.transformer_2->inner_dim() != w.transformer.inner_dim() ||
        w.transformer_2->in_channels != w.transformer.in_channels || w.transformer_2->text_dim != w.transformer.text_dim)
      throw InputError(t2cfg + ": the second expert's widths (inner dim " + std::to_string(w.transformer_2->inner_dim()) +
                       ", in_channels, text_dim) must equal transformer/'s; the two experts share one run's latents");
    if (!idx.has("boundary_ratio") || idx.dump("boundary_ratio") == "null")
      idx.fail("boundary_ratio", "null", "must be a number between 0 and 1 when transformer_2 is set (Wan2.2 "
                                         "switches experts at boundary_ratio x 1000 timesteps)");
    w.boundary_ratio = idx.get<double>("boundary_ratio", 0);
    if (!(w.boundary_ratio > 0 && w.boundary_ratio < 1))
      idx.fail("boundary_ratio", idx.dump("boundary_ratio"), "must be between 0 and 1 (Wan2.2 A14B uses 0.875)");
  }
  if (w.transformer.image_dim) {
    if (!idx.has("image_encoder") || idx.dump("image_encoder") == "[null,null]")
      idx.fail("image_encoder", idx.has("image_encoder") ? idx.dump("image_encoder") : "missing",
               "must name the CLIP image encoder: transformer/config.json sets image_dim " +
                   std::to_string(w.transformer.image_dim) + " (Wan2.1 I2V's folders have image_encoder/ and "
                   "image_processor/)");
    const std::string icfg = part_path(m, "image_encoder", "config.json"),
                      pcfg = part_path(m, "image_processor", "preprocessor_config.json");
    w.image_encoder = parse_clip_vision_config(read_text_file(icfg), icfg);
    w.image_processor = parse_clip_image_processor_config(read_text_file(pcfg), pcfg);
    if (w.image_encoder->hidden_size != w.transformer.image_dim)
      throw InputError(icfg + ": hidden_size " + std::to_string(w.image_encoder->hidden_size) + " does not match "
                       "transformer/config.json's image_dim " + std::to_string(w.transformer.image_dim));
    const int tokens = w.image_encoder->tokens();
    if (w.transformer.pos_embed_seq_len && w.transformer.pos_embed_seq_len != 2 * tokens)
      throw InputError(tcfg + ": pos_embed_seq_len " + std::to_string(w.transformer.pos_embed_seq_len) +
                       " must be twice the image encoder's " + std::to_string(tokens) + " tokens (a first and a "
                       "last picture)");
  }
  const std::string vcfg = part_path(m, "vae", "config.json");
  if (std::filesystem::exists(vcfg)) {
    w.vae = parse_wan_vae_config(read_text_file(vcfg), vcfg);
    if (w.vae->z_dim != w.transformer.out_channels)
      throw InputError(vcfg + ": z_dim " + std::to_string(w.vae->z_dim) + " does not match the transformer's "
                       "out_channels " + std::to_string(w.transformer.out_channels) + " (the latent channels)");
    // Image-to-video's condition: a mask of temporal_compression() channels, then the picture's latents.
    if (w.image_to_video() &&
        w.transformer.in_channels != w.transformer.out_channels + w.vae->temporal_compression() + w.vae->z_dim)
      throw InputError(tcfg + ": in_channels " + std::to_string(w.transformer.in_channels) + " must be the latents' " +
                       std::to_string(w.transformer.out_channels) + " + the mask's " +
                       std::to_string(w.vae->temporal_compression()) + " + the picture latents' " +
                       std::to_string(w.vae->z_dim) + " channels");
  }
  return parts;
}

class Wan final : public Family {
 public:
  const char* name() const override { return "Wan"; }
  std::vector<std::string> pipelines() const override { return {"WanPipeline", "WanImageToVideoPipeline"}; }
  const char* class_prefix() const override { return "Wan"; }
  // Download sizes: the Hub's file listings (GB of 10^9 bytes) over what download_repo fetches. GPU memory:
  // the model card's figure where it gives one, else the bf16 transformer's weights alone, a floor.
  std::vector<KnownRepo> known_repos() const override {
    return {
        // transformer 5.68 (fp32) + text_encoder (umT5-XXL, fp32) 22.7 + vae 0.51 (FastVideo's copy of it).
        {"wan2.1", "Wan2.1-T2V-1.3B", "Wan-AI/Wan2.1-T2V-1.3B-Diffusers", 28.9, 8.19,
         "480p with the model offloaded and T5 on the CPU (model card, on an RTX 4090)"},
        // transformer 14B in fp32 (12 shards of about 4.9 GB: 57) + umT5-XXL 22.7 + vae 0.51.
        {"wan2.1", "Wan2.1-T2V-14B", "Wan-AI/Wan2.1-T2V-14B-Diffusers", 80.2, 28.6,
         "the bf16 transformer's weights alone (28.6 GB); activations at 720p come on top"},
        // two 14B experts as above (57 each) + umT5-XXL 22.7 + vae 0.51; the engine holds one expert at a time.
        {"wan2.2", "Wan2.2-T2V-A14B", "Wan-AI/Wan2.2-T2V-A14B-Diffusers", 137.2, 28.6,
         "one expert's bf16 weights (the engine loads the second after releasing the first); activations on top"},
        // Image-to-video: sizes estimated from the configs, not read off the Hub. The 14B transformer with its
        // image cross-attention (k_img, v_img: 2 x 5120^2 a block) and image embedder, 16.2 B parameters in
        // fp32 (64.8) + the CLIP ViT-H/14 image encoder, 0.63 B in fp32 (2.5) + umT5-XXL 22.7 + vae 0.51.
        {"wan2.1-i2v", "Wan2.1-I2V-14B-480P", "Wan-AI/Wan2.1-I2V-14B-480P-Diffusers", 90.5, 32.4,
         "the bf16 transformer's weights alone (16.2 B parameters, estimated from its config); activations on top",
         false, true},
        {"wan2.1-i2v", "Wan2.1-I2V-14B-720P", "Wan-AI/Wan2.1-I2V-14B-720P-Diffusers", 90.5, 32.4,
         "the bf16 transformer's weights alone (16.2 B parameters, estimated from its config); activations at 720p "
         "on top",
         false, true},
        {"wan2.1-flf2v", "Wan2.1-FLF2V-14B-720P", "Wan-AI/Wan2.1-FLF2V-14B-720P-Diffusers", 90.5, 32.4,
         "the bf16 transformer's weights alone (16.2 B parameters, estimated from its config); activations at 720p "
         "on top",
         false, true, /*last_image=*/true},
        // Two experts of the T2V-A14B's shape with 36 input channels (57 each) + umT5-XXL + vae; no image encoder.
        {"wan2.2-i2v", "Wan2.2-I2V-A14B", "Wan-AI/Wan2.2-I2V-A14B-Diffusers", 137.2, 28.6,
         "one expert's bf16 weights (estimated as the T2V-A14B's; the second loads after the first is released)",
         false, true, /*last_image=*/true},
        // Text- and image-to-video: 30 blocks of width 3072 (feed-forward 14336), 5.0 B parameters in fp32 (20.0,
        // estimated from its config) + umT5-XXL 22.7 + the Wan2.2 VAE (about 1.4, estimated).
        {"wan2.2-ti2v", "Wan2.2-TI2V-5B", "Wan-AI/Wan2.2-TI2V-5B-Diffusers", 44.1, 10.0,
         "the bf16 transformer's weights alone (5.0 B parameters, estimated from its config); activations at 720p "
         "on top",
         false, true, /*last_image=*/false, /*words_alone=*/true},
    };
  }

  void read_parts(ModelFolder& m, const Fields& index) const override {
    auto parts = read_wan_parts(index, m);
    const auto& t = parts->transformer;
    if (parts->transformer.expand_timesteps)
      m.variant = {"wan2.2-ti2v", "Wan2.2 text- and image-to-video (Wan2.2-TI2V-5B)"};
    else if (!parts->image_to_video())
      m.variant = parts->transformer_2 ? Variant{"wan2.2", "Wan2.2 text-to-video with two experts (e.g. Wan2.2-T2V-A14B)"}
                                       : Variant{"wan2.1", "Wan2.1 text-to-video (e.g. Wan2.1-T2V-1.3B, -14B)"};
    else if (parts->transformer_2)
      m.variant = {"wan2.2-i2v", "Wan2.2 image-to-video with two experts (Wan2.2-I2V-A14B)"};
    else if (t.pos_embed_seq_len)
      m.variant = {"wan2.1-flf2v", "Wan2.1 first-and-last-frame-to-video (Wan2.1-FLF2V-14B)"};
    else
      m.variant = {"wan2.1-i2v", "Wan2.1 image-to-video (e.g. Wan2.1-I2V-14B-480P, -720P)"};
    m.parts = parts;
  }
  std::pair<std::string, int> t5_width(const ModelFolder& m) const override {
    return {"text_dim", wan(m).transformer.text_dim};
  }
  bool has_vae(const ModelFolder& m) const override { return wan(m).vae.has_value(); }
  bool takes_image(const ModelFolder& m) const override { return wan(m).image_to_video() || wan(m).transformer.expand_timesteps; }
  bool needs_image(const ModelFolder& m) const override { return wan(m).image_to_video(); }
  // WanImageToVideoPipeline's last_image: a mask and VAE frame at the end; with CLIP, both pictures' tokens,
  // which only FLF2V's learned positions join.
  bool takes_last_image(const ModelFolder& m) const override {
    return wan(m).image_to_video() && (!wan(m).transformer.image_dim || first_and_last_frame(m));
  }
  int vae_scale_spatial(const ModelFolder& m) const override { return wan(m).vae ? wan(m).vae->spatial_compression() : 8; }
  int vae_scale_temporal(const ModelFolder& m) const override {
    return wan(m).vae ? wan(m).vae->temporal_compression() : 4;
  }
  // umT5 reads both texts, each cleaned first (WanPipeline's prompt_clean).
  const char* t5_name() const override { return "umT5"; }
  bool cleans_prompts() const override { return true; }
  std::vector<EncoderInput> encoder_inputs(const JobSpec&) const override {
    return {{TextEncoder::T5, "prompt"}, {TextEncoder::T5, "negative_prompt"}};
  }
  // Wan is trained at 480p (the default) and 720p (14B and A14B); TI2V-5B's 720p is 1280 x 704, its pixels
  // coming in steps of 32.
  std::vector<SizePreset> size_presets(const ModelFolder& m) const override {
    return {{"720p", 1280, wan(m).transformer.expand_timesteps ? 704 : 720}};
  }
  double second_expert_boundary(const ModelFolder& m) const override {
    return wan(m).transformer_2 ? wan(m).boundary_ratio : 0;
  }

  std::string sampler_name(const ModelFolder&) const override { return "UniPCMultistepScheduler"; }
  bool makes_video() const override { return true; }
  bool classifier_free() const override { return true; }
  bool names_lora_module(const std::string& m) const override {
    return starts_with(m, "blocks.") && m.size() > 7 && std::isdigit(static_cast<unsigned char>(m[7]));
  }
  bool takes_prompt_2() const override { return false; }
  int pixel_step(const ModelFolder& m) const override {
    return m.vae_scale_spatial() * wan(m).transformer.patch_size[1];
  }
  int attention_heads(const ModelFolder& m) const override { return wan(m).transformer.num_attention_heads; }
  int hidden_size(const ModelFolder& m) const override { return wan(m).transformer.inner_dim(); }
  int blocks(const ModelFolder& m) const override { return wan(m).transformer.num_layers; }
  int train_steps(const ModelFolder& m) const override { return wan(m).scheduler.num_train_timesteps; }
  // TeaCache4Wan2.1/teacache_generate.py (without its "ret steps" mode): for text to video the 1.3B set for a
  // 1536-wide model, the 14B set otherwise (Wan2.2 A14B's experts have 14B's shape). 0.05 is the mildest
  // setting its README publishes (1.3B, about 1.5x).
  std::vector<double> teacache_coefficients(const ModelFolder& m) const override {
    // Image-to-video: the i2v-14B sets, 720P's for a folder named so (as the script picks by its checkpoint
    // folder), else 480P's; Wan2.2 I2V-A14B's experts have that shape.
    if (wan(m).image_to_video() && m.dir.find("720P") != std::string::npos)
      return {-114.36346466, 65.26524496, -18.82220707, 4.91518089, -0.23412683};
    if (wan(m).image_to_video())
      return {-3.02331670e+02, 2.23948934e+02, -5.25463970e+01, 5.87348440e+00, -2.01973289e-01};
    if (wan(m).transformer.inner_dim() <= 1536)
      return {2.39676752e+03, -1.31110545e+03, 2.01331979e+02, -8.29855975e+00, 1.37887774e-01};
    return {-5784.54975374, 5449.50911966, -1811.16591783, 256.27178429, -13.02252404};
  }
  double teacache_threshold() const override { return 0.05; }
  bool calls_per_guidance_branch() const override { return true; }  // WanPipeline's two calls a step
  // Per latent token: self-attention's q/k/v/out (4 D^2), cross-attention's q and out (2 D^2; its keys and
  // values are the text's), the feed-forward (2 D ffn).
  double gemm_flops_per_token(const ModelFolder& m) const override {
    const auto& t = wan(m).transformer;
    const double D = t.inner_dim();
    return 2 * (6 * D * D + 2 * D * t.ffn_dim);
  }
  double attention_flops_per_pair(const ModelFolder& m) const override { return 4.0 * wan(m).transformer.inner_dim(); }
  bool joint_text() const override { return false; }  // the text is attended to by cross-attention
  // Counted on our block (tests/test_op_counts), in values: its norms and modulation run in float32, as
  // diffusers', so a bfloat16 run moves more bytes than these count.
  BlockCosts block_costs(const ModelFolder& m) const override {
    BlockCosts b;
    b.ops_per_block = 114;
    b.values_per_width = 66;
    b.values_per_hidden = 2;
    b.hidden = wan(m).transformer.ffn_dim;
    b.ops_per_call = 40;
    b.ops_per_step = 37;
    return b;
  }
  double vae_decode_flops(const ModelFolder& m, int height, int width, int frames) const override {
    return wan(m).vae ? wan(m).vae->decoder_flops(height, width, frames) : 0;
  }

  TensorRenames transformer_renames(const ModelFolder&, const std::set<std::string>& names) const override {
    return wan_original_renames(names);
  }
  TensorRenames original_layout(const ModelFolder& m) const override {
    return wan_original_layout(wan(m).transformer.num_layers);
  }
  const char* gguf_architecture() const override { return "wan"; }

  void apply_defaults(JobSpec& job, const ModelFolder& m) const override {
    // WanPipeline.__call__'s defaults; 16 fps is what its examples export with.
    if (job.height == 0) job.height = 480;
    if (job.width == 0) job.width = 832;
    if (job.num_frames == 0) job.num_frames = 81;
    if (job.fps == 0) job.fps = wan(m).transformer.expand_timesteps ? 24 : 16;  // TI2V-5B's examples export at 24
    if (job.max_sequence_length == 0) job.max_sequence_length = 512;
    if (job.num_inference_steps == 0) job.num_inference_steps = 50;
    if (std::isnan(job.guidance_scale)) job.guidance_scale = takes_guidance_2(m) ? 4.0 : 5.0;
    if (takes_guidance_2(m) && std::isnan(job.guidance_scale_2)) job.guidance_scale_2 = job.guidance_scale;
    // AutoencoderKLWan's enable_tiling() defaults.
    if (job.tile_sample_min_height == 0) job.tile_sample_min_height = 256;
    if (job.tile_sample_min_width == 0) job.tile_sample_min_width = 256;
  }

  void validate(const JobSpec& job, const ModelFolder& m, std::vector<Problem>& out) const override {
    const int s = m.vae_scale_spatial();
    const std::string why = "the VAE's " + std::to_string(s) + "x times the patch size " +
                            std::to_string(wan(m).transformer.patch_size[1]);
    check_multiple("height", job.height, pixel_step(m), why, out);
    check_multiple("width", job.width, pixel_step(m), why, out);
    const int tc = m.vae_scale_temporal();
    check_frames(job.num_frames, tc, out);
    if (job.max_sequence_length < 1 || job.max_sequence_length > 512)
      out.push_back({"max_sequence_length", "--max_sequence_length " + std::to_string(job.max_sequence_length) +
                                                ": must be between 1 and 512 (umT5's length in Wan)"});
    if (takes_guidance_2(m) && (job.use_magcache || !job.magcache_calibrate.empty()))
      out.push_back({job.use_magcache ? "use_magcache" : "magcache_calibrate",
                     "MagCache's ratios are calibrated for one transformer, and Wan2.2 steps through two experts; "
                     "use --use_fbcache or --use_teacache instead"});
    if (wan(m).transformer.expand_timesteps && job.use_teacache)
      out.push_back({"use_teacache", "--use_teacache: TeaCache has published no coefficients for Wan2.2-TI2V-5B; use "
                                     "--use_fbcache or --use_magcache instead"});
    if (!job.image_file.empty() && !wan(m).vae)
      out.push_back({"image", "--image " + job.image_file + ": the picture is encoded by the model's VAE, and this "
                              "folder has no vae/; use the model's complete folder as the Hub has it"});
    if (first_and_last_frame(m) && !job.image_file.empty() && job.last_image_file.empty())
      out.push_back({"last_image", "this first-and-last-frame model (" + m.variant.name + ") joins two pictures: "
                                   "give the one the clip ends on with --last_image FILE, or use an image-to-video "
                                   "model (Wan2.1-I2V-14B) to animate one"});
    if (job.use_dynamic_cfg)
      out.push_back({"use_dynamic_cfg", "--use_dynamic_cfg: CogVideoX's guidance rule; Wan guides with a "
                                        "constant scale; leave it out"});
    if (job.vae_tiling)
      for (auto [field, v] : {std::pair{"tile_sample_min_height", job.tile_sample_min_height},
                              std::pair{"tile_sample_min_width", job.tile_sample_min_width}})
        check_multiple(field, v, 4 * s, "whole latent pixels, and a quarter of a tile overlaps its neighbour", out);
  }

  LatentGeometry geometry(const JobSpec& job, const ModelFolder& m) const override {
    const auto& t = wan(m).transformer;
    LatentGeometry g;
    g.channels_first = true;
    g.frames = (job.num_frames - 1) / m.vae_scale_temporal() + 1;
    g.padded_frames = g.frames;
    g.channels = t.out_channels;
    g.height = job.height / m.vae_scale_spatial();
    g.width = job.width / m.vae_scale_spatial();
    g.latent_tokens =
        int64_t(g.frames / t.patch_size[0]) * (g.height / t.patch_size[1]) * (g.width / t.patch_size[2]);
    g.text_tokens = job.max_sequence_length;
    return g;
  }

  MemoryEstimate memory(const ParallelConfig& p, const JobSpec& job, const ModelFolder& m, int b) const override {
    const auto& t = wan(m).transformer;
    const double D = t.inner_dim();
    // Per block: self- and cross-attention's q/k/v/out (8 D^2), the feed-forward (2 D ffn), the modulation
    // table and norms (about 10 D). Once: the patch embedding and head, the text MLP, the time MLP and its
    // 6D projection.
    const double block = 8 * D * D + 2 * D * t.ffn_dim + 10 * D;
    const double other = 2.0 * t.in_channels * t.patch_volume() * D + t.text_dim * D + D * D + t.freq_dim * D +
                         D * D + 6 * D * D;
    MemoryEstimate e;
    // TI2V-5B gives each token its own timestep, so each token its own six modulation vectors, in float32.
    e.transformer_gib = transformer_gib(p, job, m, block, other, std::max(D * t.ffn_dim, 6 * D * D), D, b,
                                       t.expand_timesteps ? 6 : 0);  // widest: the feed-forward's, or the time projection
    e.block_weight_gib = block_weight_gib(job, m, block, other, b);
    if (wan(m).vae && job.height > 0) {
      // The decoder's widest full-size level, a few copies, for a batch of four frames and its two-frame cache.
      const auto dims = wan(m).vae->decoder_dims();
      const int patch = wan(m).vae->patch_size;
      e.vae_gib = 6.0 * 4 * job.height * job.width * dims.back() * b / (patch * patch) / kGiB + 0.5;
      if (p.use_parallel_vae) e.vae_gib = (e.vae_gib - 0.5) / p.world_size() + 0.5;
    }
    return e;
  }
};

}  // namespace

const Family& wan_family() {
  static const Wan row;
  return row;
}

}  // namespace studio::plan

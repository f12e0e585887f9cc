// Writes a diffusers folder with random weights and the real config of a published model, for benchmarks:
// - cogvideox (default): CogVideoX-2B (30 heads x 64, width 1920, text 4096 -> 226 tokens, 480 x 720 x 49
//   frames); `--height --width --num_frames` change the sample size in its config (dit-launch's defaults);
// - cogvideox-5b: CogVideoX-5B's transformer (48 heads x 64, width 3072, rotary positions), the same sampler;
// - wan21: Wan2.1-T2V-1.3B (12 heads x 128, ffn 8960, text 4096 -> 512 tokens, flow_shift 3.0 for 480p);
// - wan21-14b: Wan2.1-T2V-14B (40 heads x 128, width 5120, ffn 13824), likewise;
// - wan21-i2v-14b: Wan2.1-I2V-14B-480P (the same blocks, 36 input channels, an image cross-attention of 257
//   tokens) with its CLIP ViT-H/14 image encoder (32 layers, width 1280) and the VAE's encoder (`--vae` implied);
// - flux: FLUX.1-dev (24 heads x 128, width 3072, 19 double and 38 single blocks: `--layers N` makes N of each
//   kind), its embeds with pooled_prompt_embeds;
// - wan22: the same expert twice (transformer/ and transformer_2/, different weights), boundary_ratio
//   0.875 as Wan2.2 A14B, to show one expert resident at a time;
// - hunyuan15: HunyuanVideo-1.5 480p T2V (16 heads x 128, width 2048, 54 dual-stream blocks, Qwen 3584 wide ->
//   up to 1000 tokens, ByT5 1472 wide), flow shift 5, the guider's 6; its embeds add prompt_embeds_2; 720p's
//   target_size (960) with --height 720. `--text_encoders` adds Qwen2.5-VL-7B's language model (--layers + 2
//   layers) and ByT5-small's encoder with random weights; their tokenizers are not written (copy tokenizer/ and
//   tokenizer_2/ from a folder that has them, as bench/hunyuan15_text.sh does).
// - hunyuan15-i2v: HunyuanVideo-1.5 480p I2V (the same blocks, task_type i2v) with its SigLIP image encoder
//   (so400m-patch14-384's shape: 27 layers, width 1152) and processor, and the VAE's encoder (`--vae` implied).
// `--layers N` sets the blocks (both real models have 30); `--vae` adds vae/ with the real VAE config (the
// decoder's weights: text-to-video needs no encoder; bench-vae-encode times the encoder); `--bfloat16` stores the transformer in bfloat16 (half the
// disk and, run with --dtype bfloat16, weights the engine maps instead of copying). No text encoder (but hunyuan15's
// --text_encoders):
// embeds.safetensors holds random prompt_embeds and negative_prompt_embeds for --prompt_embeds. Prints the
// plan's estimate of the transformer weights per rank for 1, 2 and 4 PipeFusion stages. `--gguf Q8_0|Q4_K` also
// writes the transformer as OUT_DIR/transformer-<type>.gguf (bench/gguf_quantize.h) for --transformer.
// `--lora RANK` writes OUT_DIR/lora-r<RANK>.safetensors, a LoRA of that rank on every linear layer of the
// blocks, for --lora.
// Usage: bench-make-model OUT_DIR [--family cogvideox|cogvideox-5b|wan21|wan21-14b|wan21-i2v-14b|wan22|flux|hunyuan15
//        |hunyuan15-i2v]
//        [--layers N] [--height H --width W --num_frames F] [--vae] [--text_encoders] [--bfloat16] [--gguf TYPE]
//        [--lora RANK]
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <ATen/TensorOperators.h>

#include "gguf_quantize.h"
#include "io/safetensors/safetensors_file.h"
#include "io/weights/tensor_file.h"
#include "io/weights/weights.h"
#include "models/cogvideox/cogvideox_transformer.h"
#include "models/cogvideox/cogvideox_vae.h"
#include "models/flux/flux_transformer.h"
#include "models/hunyuan15/hunyuan15_transformer.h"
#include "models/hunyuan15/hunyuan15_vae.h"
#include "models/image/clip_vision_encoder.h"
#include "models/wan/wan_transformer.h"
#include "models/wan/wan_vae.h"
#include "plan/clip_config.h"
#include "plan/family.h"
#include "plan/families/cogvideox_config.h"
#include "plan/families/flux_config.h"
#include "plan/families/hunyuan15_config.h"
#include "plan/families/wan_config.h"
#include "plan/parallel.h"
#include "sampling/noise.h"
#include "text/encode/llm_encoder.h"
#include "text/encode/t5_encoder.h"

namespace fs = std::filesystem;
using namespace studio;

namespace {

struct Options {
  std::string family = "cogvideox";
  int layers = 30, height = 480, width = 720, frames = 49;
  bool vae = false, bfloat16 = false, text_encoders = false;
  std::string gguf;
  int lora_rank = 0;
};

void write_cogvideox_configs(const fs::path& out, const Options& o) {
  std::ofstream(out / "model_index.json") << R"({"_class_name": "CogVideoXPipeline", "scheduler": ["diffusers",
    "CogVideoXDDIMScheduler"], "transformer": ["diffusers", "CogVideoXTransformer3DModel"])"
                                          << (o.vae ? R"(, "vae": ["diffusers", "AutoencoderKLCogVideoX"]})" : "}");
  std::ofstream(out / "transformer" / "config.json")
      << R"({"_class_name": "CogVideoXTransformer3DModel", "num_attention_heads": )"
      << (o.family == "cogvideox-5b" ? 48 : 30) << R"(, "attention_head_dim": 64,
    "in_channels": 16, "out_channels": 16, "time_embed_dim": 512, "text_embed_dim": 4096, "num_layers": )"
      << o.layers << R"(, "sample_width": )" << o.width / 8 << R"(, "sample_height": )" << o.height / 8
      << R"(, "sample_frames": )" << o.frames << R"(, "patch_size": 2,
    "max_text_seq_length": 226, "use_rotary_positional_embeddings": )"
      << (o.family == "cogvideox-5b" ? "true" : "false") << "}";
  // CogVideoX-2b's scheduler config in full: diffusers' class defaults for missing fields are not its values.
  std::ofstream(out / "scheduler" / "scheduler_config.json")
      << R"({"_class_name": "CogVideoXDDIMScheduler", "num_train_timesteps": 1000, "beta_start": 0.00085,
    "beta_end": 0.012, "beta_schedule": "scaled_linear", "clip_sample": false, "set_alpha_to_one": true,
    "steps_offset": 0, "prediction_type": "v_prediction", "timestep_spacing": "trailing",
    "rescale_betas_zero_snr": true, "snr_shift_scale": 3.0})";
  if (o.vae)
    std::ofstream(out / "vae" / "config.json") << R"({"_class_name": "AutoencoderKLCogVideoX", "act_fn": "silu",
    "block_out_channels": [128, 256, 256, 512], "down_block_types": ["CogVideoXDownBlock3D", "CogVideoXDownBlock3D",
    "CogVideoXDownBlock3D", "CogVideoXDownBlock3D"], "force_upcast": true, "in_channels": 3, "latent_channels": 16,
    "latents_mean": null, "latents_std": null, "layers_per_block": 3, "norm_eps": 1e-06, "norm_num_groups": 32,
    "out_channels": 3, "sample_height": 480, "sample_width": 720, "scaling_factor": 1.15258426,
    "shift_factor": null, "temporal_compression_ratio": 4, "up_block_types": ["CogVideoXUpBlock3D",
    "CogVideoXUpBlock3D", "CogVideoXUpBlock3D", "CogVideoXUpBlock3D"], "use_post_quant_conv": false,
    "use_quant_conv": false})";
}

// Wan-AI/Wan2.1-T2V-1.3B-Diffusers' configs (diffusers 0.35.2), its text encoder and tokenizer left out.
// black-forest-labs/FLUX.1-dev's transformer and scheduler configs (diffusers 0.32.2).
void write_flux_configs(const fs::path& out, const Options& o) {
  std::ofstream(out / "model_index.json") << R"({"_class_name": "FluxPipeline", "scheduler": ["diffusers",
    "FlowMatchEulerDiscreteScheduler"], "transformer": ["diffusers", "FluxTransformer2DModel"]})";
  std::ofstream(out / "transformer" / "config.json")
      << R"({"_class_name": "FluxTransformer2DModel", "attention_head_dim": 128, "axes_dims_rope": [16, 56, 56],
    "guidance_embeds": true, "in_channels": 64, "joint_attention_dim": 4096, "num_attention_heads": 24,
    "num_layers": )" << o.layers << R"(, "num_single_layers": )" << o.layers << R"(, "patch_size": 1,
    "pooled_projection_dim": 768})";
  std::ofstream(out / "scheduler" / "scheduler_config.json")
      << R"({"_class_name": "FlowMatchEulerDiscreteScheduler", "base_image_seq_len": 256, "base_shift": 0.5,
    "max_image_seq_len": 4096, "max_shift": 1.15, "num_train_timesteps": 1000, "shift": 3.0,
    "use_dynamic_shifting": true})";
}

// hunyuanvideo-community/HunyuanVideo-1.5-Diffusers-480p_t2v's configs (diffusers 0.42.1), its text encoders left out.
void write_hunyuan15_configs(const fs::path& out, const Options& o, bool i2v) {
  fs::create_directories(out / "guider");
  std::ofstream(out / "model_index.json")
      << (i2v ? R"({"_class_name": "HunyuanVideo15ImageToVideoPipeline", "image_encoder": ["transformers",
    "SiglipVisionModel"], "feature_extractor": ["transformers", "SiglipImageProcessor"], )"
              : R"({"_class_name": "HunyuanVideo15Pipeline", )")
      << R"("guider": ["diffusers", "ClassifierFreeGuidance"], "scheduler": ["diffusers",
    "FlowMatchEulerDiscreteScheduler"], "transformer": ["diffusers", "HunyuanVideo15Transformer3DModel"])"
      << (o.text_encoders ? R"(, "text_encoder": ["transformers", "Qwen2_5_VLTextModel"], "text_encoder_2":
    ["transformers", "T5EncoderModel"], "tokenizer": ["transformers", "Qwen2TokenizerFast"], "tokenizer_2":
    ["transformers", "ByT5Tokenizer"])"
                          : "")
      << (o.vae ? R"(, "vae": ["diffusers", "AutoencoderKLHunyuanVideo15"]})" : "}");
  std::ofstream(out / "transformer" / "config.json")
      << R"({"_class_name": "HunyuanVideo15Transformer3DModel", "attention_head_dim": 128, "image_embed_dim": 1152,
    "in_channels": 65, "mlp_ratio": 4.0, "num_attention_heads": 16, "num_layers": )" << o.layers
      << R"(, "num_refiner_layers": 2, "out_channels": 32, "patch_size": 1, "patch_size_t": 1, "qk_norm": "rms_norm",
    "rope_axes_dim": [16, 56, 56], "rope_theta": 256.0, "target_size": )" << (o.height >= 720 ? 960 : 640)
      << R"(, "task_type": ")" << (i2v ? "i2v" : "t2v")
      << R"(", "text_embed_2_dim": 1472, "text_embed_dim": 3584, "use_meanflow": false})";
  if (i2v) {  // google/siglip-so400m-patch14-384's vision tower (width 1152: the transformer's image_embed_dim)
    fs::create_directories(out / "image_encoder");
    fs::create_directories(out / "feature_extractor");
    std::ofstream(out / "image_encoder" / "config.json")
        << R"({"architectures": ["SiglipVisionModel"], "hidden_act": "gelu_pytorch_tanh", "hidden_size": 1152,
    "image_size": 384, "intermediate_size": 4304, "layer_norm_eps": 1e-06, "model_type": "siglip_vision_model",
    "num_attention_heads": 16, "num_channels": 3, "num_hidden_layers": 27, "patch_size": 14, "vision_use_head": true})";
    std::ofstream(out / "feature_extractor" / "preprocessor_config.json")
        << R"({"do_normalize": true, "do_rescale": true, "do_resize": true, "image_mean": [0.5, 0.5, 0.5],
    "image_processor_type": "SiglipImageProcessor", "image_std": [0.5, 0.5, 0.5], "resample": 3,
    "rescale_factor": 0.00392156862745098, "size": {"height": 384, "width": 384}})";
  }
  std::ofstream(out / "scheduler" / "scheduler_config.json")
      << R"({"_class_name": "FlowMatchEulerDiscreteScheduler", "num_train_timesteps": 1000, "shift": 5.0,
    "use_dynamic_shifting": false})";
  std::ofstream(out / "guider" / "guider_config.json")
      << R"({"_class_name": "ClassifierFreeGuidance", "enabled": true, "guidance_scale": 6.0})";
  if (o.vae)
    std::ofstream(out / "vae" / "config.json") << R"({"_class_name": "AutoencoderKLHunyuanVideo15",
    "block_out_channels": [128, 256, 512, 1024, 1024], "in_channels": 3, "latent_channels": 32, "layers_per_block": 2,
    "out_channels": 3, "scaling_factor": 1.03682, "spatial_compression_ratio": 16, "temporal_compression_ratio": 4})";
  if (!o.text_encoders) return;
  // Qwen2.5-VL-7B's language model with --layers + 2 layers (the pipeline reads hidden_states[-3], so --layers of
  // them run; the real model runs 26 of 28), and ByT5-small's encoder with the glyph tokenizer's vocabulary.
  fs::create_directories(out / "text_encoder");
  fs::create_directories(out / "text_encoder_2");
  std::ofstream(out / "text_encoder" / "config.json")
      << R"({"architectures": ["Qwen2_5_VLTextModel"], "attention_dropout": 0.0, "hidden_act": "silu",
    "hidden_size": 3584, "intermediate_size": 18944, "max_position_embeddings": 128000, "model_type": "qwen2_5_vl_text",
    "num_attention_heads": 28, "num_hidden_layers": )" << o.layers + 2 << R"(, "num_key_value_heads": 4,
    "rms_norm_eps": 1e-06, "rope_scaling": {"mrope_section": [16, 24, 24], "rope_type": "default", "type": "default"},
    "rope_theta": 1000000.0, "sliding_window": null, "use_sliding_window": false, "vocab_size": 152064})";
  std::ofstream(out / "text_encoder_2" / "config.json")
      << R"({"architectures": ["T5EncoderModel"], "d_ff": 3584, "d_kv": 64, "d_model": 1472, "dense_act_fn": "gelu_new",
    "eos_token_id": 1, "feed_forward_proj": "gated-gelu", "is_encoder_decoder": true, "is_gated_act": true,
    "layer_norm_epsilon": 1e-06, "model_type": "t5", "num_decoder_layers": 4, "num_heads": 6, "num_layers": 12,
    "pad_token_id": 0, "relative_attention_max_distance": 128, "relative_attention_num_buckets": 32,
    "tie_word_embeddings": false, "tokenizer_class": "ByT5Tokenizer", "vocab_size": 1510})";
}

void write_wan_configs(const fs::path& out, const Options& o, bool two_experts) {
  const char* expert = R"("WanTransformer3DModel"])";
  const bool i2v = o.family == "wan21-i2v-14b", wide = o.family == "wan21-14b" || i2v;
  std::ofstream(out / "model_index.json")
      << R"({"_class_name": ")" << (i2v ? "WanImageToVideoPipeline" : "WanPipeline")
      << R"(", "_diffusers_version": "0.35.2", "scheduler": ["diffusers",
    "UniPCMultistepScheduler"], "text_encoder": [null, null], "tokenizer": [null, null],)"
      << (i2v ? R"( "image_encoder": ["transformers", "CLIPVisionModelWithProjection"],
    "image_processor": ["transformers", "CLIPImageProcessor"],)"
              : "")
      << R"( "transformer": ["diffusers", )" << expert
      << (o.vae ? R"(, "vae": ["diffusers", "AutoencoderKLWan"])" : "") << R"(, "expand_timesteps": false, )"
      << (two_experts ? std::string(R"("boundary_ratio": 0.875, "transformer_2": ["diffusers", )") + expert
                      : std::string(R"("boundary_ratio": null, "transformer_2": [null, null])"))
      << "}";
  for (const char* part : {"transformer", "transformer_2"}) {
    if (!two_experts && std::string(part) == "transformer_2") continue;
    fs::create_directories(out / part);
    std::ofstream(out / part / "config.json")
        << R"({"_class_name": "WanTransformer3DModel", "_diffusers_version": "0.35.2", "added_kv_proj_dim": )"
        << (i2v ? "5120" : "null") << R"(, "attention_head_dim": 128, "cross_attn_norm": true, "eps": 1e-06, "ffn_dim": )"
        << (wide ? 13824 : 8960) << R"(, "freq_dim": 256, "image_dim": )" << (i2v ? "1280" : "null")
        << R"(, "in_channels": )" << (i2v ? 36 : 16) << R"(, "num_attention_heads": )" << (wide ? 40 : 12)
        << R"(, "num_layers": )" << o.layers << R"(, "out_channels": 16, "patch_size": [1, 2, 2],
    "pos_embed_seq_len": null, "qk_norm": "rms_norm_across_heads", "rope_max_seq_len": 1024, "text_dim": 4096})";
  }
  // wan21_tiny's scheduler config (diffusers' own for Wan2.1) with flow_shift 3.0, the 480p value.
  std::ofstream(out / "scheduler" / "scheduler_config.json")
      << R"({"_class_name": "UniPCMultistepScheduler", "_diffusers_version": "0.35.2", "beta_end": 0.02,
    "beta_schedule": "linear", "beta_start": 0.0001, "disable_corrector": [], "dynamic_thresholding_ratio": 0.995,
    "final_sigmas_type": "zero", "flow_shift": 3.0, "lower_order_final": true, "num_train_timesteps": 1000,
    "predict_x0": true, "prediction_type": "flow_prediction", "rescale_betas_zero_snr": false,
    "sample_max_value": 1.0, "solver_order": 2, "solver_p": null, "solver_type": "bh2", "steps_offset": 0,
    "thresholding": false, "time_shift_type": "exponential", "timestep_spacing": "linspace", "trained_betas": null,
    "use_beta_sigmas": false, "use_dynamic_shifting": false, "use_exponential_sigmas": false,
    "use_flow_sigmas": true, "use_karras_sigmas": false})";
  if (o.vae)
    std::ofstream(out / "vae" / "config.json")
        << R"({"_class_name": "AutoencoderKLWan", "_diffusers_version": "0.35.2", "attn_scales": [], "base_dim": 96,
    "decoder_base_dim": null, "dim_mult": [1, 2, 4, 4], "dropout": 0.0, "in_channels": 3, "is_residual": false,
    "latents_mean": [-0.7571, -0.7089, -0.9113, 0.1075, -0.1745, 0.9653, -0.1517, 1.5508, 0.4134, -0.0715,
      0.5517, -0.3632, -0.1922, -0.9497, 0.2503, -0.2921],
    "latents_std": [2.8184, 1.4541, 2.3275, 2.6558, 1.2196, 1.7708, 2.6052, 2.0743, 3.2687, 2.1526, 2.8652,
      1.5579, 1.6382, 1.1253, 2.8251, 1.916],
    "num_res_blocks": 2, "out_channels": 3, "patch_size": null, "scale_factor_spatial": 8,
    "scale_factor_temporal": 4, "temperal_downsample": [false, true, true], "z_dim": 16})";
  if (!i2v) return;
  fs::create_directories(out / "image_encoder");
  fs::create_directories(out / "image_processor");
  std::ofstream(out / "image_encoder" / "config.json")
      << R"({"architectures": ["CLIPVisionModelWithProjection"], "hidden_act": "gelu", "hidden_size": 1280,
    "image_size": 224, "intermediate_size": 5120, "layer_norm_eps": 1e-05, "model_type": "clip_vision_model",
    "num_attention_heads": 16, "num_channels": 3, "num_hidden_layers": 32, "patch_size": 14, "projection_dim": 1024})";
  std::ofstream(out / "image_processor" / "preprocessor_config.json")
      << R"({"crop_size": {"height": 224, "width": 224}, "do_center_crop": true, "do_convert_rgb": true,
    "do_normalize": true, "do_rescale": true, "do_resize": true, "image_mean": [0.48145466, 0.4578275, 0.40821073],
    "image_processor_type": "CLIPImageProcessor", "image_std": [0.26862954, 0.26130258, 0.27577711], "resample": 3,
    "rescale_factor": 0.00392156862745098, "size": {"shortest_edge": 224}})";
}

// Rewrites a float32 safetensors file in bfloat16, one tensor at a time (a 1.3B model is 5.2 GB in float32).
void store_as_bfloat16(const fs::path& file) {
  const fs::path f32 = file.string() + ".float32";
  fs::rename(file, f32);
  {
    const auto in = io::SafetensorsFile::open(f32.string());
    std::vector<at::Tensor> kept;
    std::vector<io::TensorToWrite> rows;
    for (const auto& t : in->tensors()) {
      kept.push_back(io::to_tensor(in, t, at::kBFloat16, at::kCPU));
      rows.push_back({t.name, io::DType::BF16, t.shape, kept.back().data_ptr()});
    }
    io::write_safetensors(file.string(), rows);
  }
  fs::remove(f32);
}

// Makes `part`'s weights with `seed` by loading the model from a synthetic set, and saves them.
template <class Load>
void write_weights(const fs::path& part, uint64_t seed, bool bfloat16, Load load,
                   const char* name = "diffusion_pytorch_model.safetensors") {
  const fs::path file = part / name;
  {
    auto w = io::WeightSet::synthetic(seed);
    load(w);
    w.save(file.string());
  }
  if (bfloat16) store_as_bfloat16(file);
}

// A LoRA of rank `rank` on every linear layer of the transformer's blocks (what a style or character LoRA
// trains), as diffusers saves one: transformer.<module>.lora_A.weight [rank, in] and .lora_B.weight [out, rank],
// bfloat16, random; no alpha, so a scale of 1.
void write_lora(const fs::path& transformer_file, const fs::path& out, int rank) {
  const auto in = io::SafetensorsFile::open(transformer_file.string());
  sampling::SeededNoise noise(21);
  std::vector<at::Tensor> kept;
  std::vector<io::TensorToWrite> rows;
  for (const auto& t : in->tensors()) {
    const size_t dot = t.name.rfind(".weight");
    if (t.shape.size() != 2 || dot == std::string::npos || dot + 7 != t.name.size() ||
        t.name.find("blocks.") == std::string::npos)
      continue;
    const std::string module = "transformer." + t.name.substr(0, dot);
    for (const auto& [name, shape] : {std::pair{module + ".lora_A.weight", std::vector<int64_t>{rank, t.shape[1]}},
                                      std::pair{module + ".lora_B.weight", std::vector<int64_t>{t.shape[0], rank}}}) {
      kept.push_back((noise.draw(shape) * 0.01).to(at::kBFloat16).contiguous());
      rows.push_back({name, io::DType::BF16, shape, kept.back().data_ptr()});
    }
  }
  io::write_safetensors(out.string(), rows);
}

void print_weight_estimate(const plan::ModelFolder& folder, int bytes) {
  plan::JobSpec weights_only;  // no sample size: the estimate holds no activations
  for (int stages : {1, 2, 4}) {
    plan::ParallelConfig p;
    p.pipefusion_parallel_degree = stages;
    std::printf("plan: transformer weights per rank with %d PipeFusion stage(s): %.2f GiB\n", stages,
                plan::estimate_memory(p, weights_only, folder, bytes).transformer_gib);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const char* usage = "usage: bench-make-model OUT_DIR [--family cogvideox|cogvideox-5b|wan21|wan21-14b|wan21-i2v-14b|wan22|"
                      "flux|hunyuan15|hunyuan15-i2v] [--layers N] "
                      "[--height H --width W --num_frames F] [--vae] [--text_encoders] [--bfloat16] [--gguf TYPE] [--lora RANK]\n";
  if (argc < 2) return std::cerr << usage, 2;
  if (argv[1][0] == '-') {  // an option where the folder goes (--help too): no folder named after it
    const bool help = !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h");
    return (help ? std::cout : std::cerr) << usage, help ? 0 : 2;
  }
  Options o;
  for (int i = 2; i < argc; ++i) {
    const bool value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--vae")) o.vae = true;
    else if (!std::strcmp(argv[i], "--text_encoders")) o.text_encoders = true;
    else if (!std::strcmp(argv[i], "--bfloat16")) o.bfloat16 = true;
    else if (value && !std::strcmp(argv[i], "--family")) o.family = argv[++i];
    else if (value && !std::strcmp(argv[i], "--gguf")) o.gguf = argv[++i];
    else if (value && !std::strcmp(argv[i], "--lora")) o.lora_rank = std::atoi(argv[++i]);
    else if (value && !std::strcmp(argv[i], "--layers")) o.layers = std::atoi(argv[++i]);
    else if (value && !std::strcmp(argv[i], "--height")) o.height = std::atoi(argv[++i]);
    else if (value && !std::strcmp(argv[i], "--width")) o.width = std::atoi(argv[++i]);
    else if (value && !std::strcmp(argv[i], "--num_frames")) o.frames = std::atoi(argv[++i]);
    else return std::cerr << "bench-make-model: unknown or incomplete option " << argv[i] << "\n" << usage, 2;
  }
  const bool hunyuan_i2v = o.family == "hunyuan15-i2v", i2v = o.family == "wan21-i2v-14b" || hunyuan_i2v;
  const bool wan = o.family == "wan21" || o.family == "wan21-14b" || o.family == "wan21-i2v-14b" || o.family == "wan22",
             flux = o.family == "flux", hunyuan = o.family == "hunyuan15" || hunyuan_i2v;
  o.vae = o.vae || i2v;  // the picture is encoded
  if (!wan && !flux && !hunyuan && o.family != "cogvideox" && o.family != "cogvideox-5b")
    return std::cerr << "bench-make-model: --family " << o.family << ": cogvideox, cogvideox-5b, wan21, wan21-14b, "
                     << "wan21-i2v-14b, wan22, flux, hunyuan15 or hunyuan15-i2v\n", 2;
  const auto gguf = plan::weight_format_named(o.gguf);
  if (!o.gguf.empty() && gguf != plan::WeightFormat::Q8_0 && gguf != plan::WeightFormat::Q4_K)
    return std::cerr << "bench-make-model: --gguf " << o.gguf << ": Q8_0 or Q4_K\n", 2;
  const fs::path out(argv[1]);
  fs::create_directories(out / "transformer");
  fs::create_directories(out / "scheduler");
  if (o.vae) fs::create_directories(out / "vae");
  if (wan) write_wan_configs(out, o, o.family == "wan22");
  else if (flux) write_flux_configs(out, o);
  else if (hunyuan) write_hunyuan15_configs(out, o, hunyuan_i2v);
  else write_cogvideox_configs(out, o);

  const auto folder = plan::read_model_folder(out.string());
  if (wan) {
    const auto& parts = folder.parts_as<plan::WanParts>();
    std::vector<const char*> experts{"transformer"};
    if (parts.transformer_2) experts.push_back("transformer_2");
    for (size_t e = 0; e < experts.size(); ++e)
      write_weights(out / experts[e], 11 + 10 * e, o.bfloat16, [&](io::WeightSet& w) {
        models::WanTransformer::load(w, parts.transformer, at::kFloat, at::kCPU);
      });
    if (o.vae)  // the decoder only (diffusers' encoder stays unloaded), but for image-to-video
      write_weights(out / "vae", 13, false,
                    [&](io::WeightSet& w) { models::WanVae::load(w, *parts.vae, at::kFloat, at::kCPU, i2v); });
    if (i2v)
      write_weights(
          out / "image_encoder", 14, o.bfloat16,
          [&](io::WeightSet& w) { models::ClipVisionEncoder::load(w, *parts.image_encoder, at::kFloat, at::kCPU); },
          "model.safetensors");
  } else if (hunyuan) {
    const auto& parts = folder.parts_as<plan::Hunyuan15Parts>();
    write_weights(out / "transformer", 11, o.bfloat16, [&](io::WeightSet& w) {
      models::Hunyuan15Transformer::load(w, parts.transformer, at::kFloat, at::kCPU);
    });
    if (o.vae)  // the decoder only, but for image-to-video
      write_weights(out / "vae", 13, false, [&](io::WeightSet& w) {
        models::Hunyuan15Vae::load(w, *parts.vae, at::kFloat, at::kCPU, hunyuan_i2v);
      });
    if (hunyuan_i2v)
      write_weights(
          out / "image_encoder", 14, o.bfloat16,
          [&](io::WeightSet& w) { models::ClipVisionEncoder::load(w, *parts.image_encoder, at::kFloat, at::kCPU); },
          "model.safetensors");
    if (o.text_encoders) {
      write_weights(
          out / "text_encoder", 15, o.bfloat16,
          [&](io::WeightSet& w) { text::LlmEncoder::load(w, *parts.qwen, at::kFloat, at::kCPU); },
          "model.safetensors");
      write_weights(
          out / "text_encoder_2", 16, o.bfloat16,
          [&](io::WeightSet& w) { text::T5Encoder::load(w, *folder.text_encoder, at::kFloat, at::kCPU); },
          "model.safetensors");
    }
  } else if (flux) {
    write_weights(out / "transformer", 11, o.bfloat16, [&](io::WeightSet& w) {
      models::FluxTransformer::load(w, folder.parts_as<plan::FluxParts>().transformer, at::kFloat, at::kCPU);
    });
  } else {
    write_weights(out / "transformer", 11, o.bfloat16, [&](io::WeightSet& w) {
      models::CogVideoXTransformer::load(w, folder.parts_as<plan::CogVideoXParts>().transformer, at::kFloat, at::kCPU);
    });
    if (o.vae)
      write_weights(out / "vae", 13, false,
                    [&](io::WeightSet& w) { models::CogVideoXVae::load(w, *folder.parts_as<plan::CogVideoXParts>().vae, at::kFloat, at::kCPU); });
  }
  const int64_t text_tokens = wan || flux ? 512 : 226;
  sampling::SeededNoise noise(12);
  if (hunyuan)  // a prompt's real rows: about 100 Qwen rows and 20 ByT5 ones (a quoted word), 80 for the negative
    io::save_tensors((out / "embeds.safetensors").string(),
                     {{"prompt_embeds", noise.draw({1, 100, 3584})},
                      {"negative_prompt_embeds", noise.draw({1, 80, 3584})},
                      {"prompt_embeds_2", noise.draw({1, 20, 1472})}});
  else
    io::save_tensors((out / "embeds.safetensors").string(),
                     {{"prompt_embeds", noise.draw({1, text_tokens, 4096})},
                      {flux ? "pooled_prompt_embeds" : "negative_prompt_embeds",
                       flux ? noise.draw({1, 768}) : noise.draw({1, text_tokens, 4096})}});
  if (gguf)
    bench::write_gguf_transformer((out / "transformer" / "diffusion_pytorch_model.safetensors").string(),
                                  (out / (std::string("transformer-") + plan::format_info(*gguf).name + ".gguf")).string(), *gguf,
                                  plan::rules_of(folder).gguf_architecture());
  if (o.lora_rank > 0)
    write_lora(out / "transformer" / "diffusion_pytorch_model.safetensors",
               out / ("lora-r" + std::to_string(o.lora_rank) + ".safetensors"), o.lora_rank);
  std::cout << "wrote " << out.string() << " (" << o.family << ", " << o.layers << " layers"
            << (o.vae ? ", vae" : "") << (o.bfloat16 ? ", bfloat16" : "") << ")\n";
  print_weight_estimate(folder, o.bfloat16 ? 2 : 4);
  return 0;
}

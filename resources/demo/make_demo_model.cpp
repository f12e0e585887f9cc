// Makes the built-in demo models: a small CogVideoX-2B-shaped diffusers folder (video) and a small
// FLUX.1-dev-shaped one (images), with deterministic random weights (a few MB) and tiny text encoders, so
// that dit-launch and the studio run on a fresh machine with no download. Random weights make abstract
// motion and coloured noise, not pictures.
// Usage: dit-make-demo-model [--flux] OUT_DIR TOKENIZER_DIR (the T5 tokenizer made by dit-make-demo-tokenizer)
#include <filesystem>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "io/weights/weights.h"
#include "models/vae/autoencoder_kl.h"
#include "models/cogvideox/cogvideox_transformer.h"
#include "models/cogvideox/cogvideox_vae.h"
#include "models/flux/flux_transformer.h"
#include "plan/error.h"
#include "plan/families/cogvideox_config.h"
#include "plan/families/flux_config.h"
#include "text/encode/clip_encoder.h"
#include "text/tokenize/clip_tokenizer.h"
#include "text/encode/t5_encoder.h"

namespace fs = std::filesystem;
using namespace studio;

namespace {

// The configs follow CogVideoX-2b's, scaled down: 192 x 288 pixels, 25 frames at 8 fps.
const char* kModelIndex = R"({"_class_name": "CogVideoXPipeline", "_diffusers_version": "0.32.2",
  "scheduler": ["diffusers", "CogVideoXDDIMScheduler"], "transformer": ["diffusers", "CogVideoXTransformer3DModel"],
  "vae": ["diffusers", "AutoencoderKLCogVideoX"], "text_encoder": ["transformers", "T5EncoderModel"],
  "tokenizer": ["transformers", "T5Tokenizer"]})";
const char* kTransformer = R"({"_class_name": "CogVideoXTransformer3DModel", "_diffusers_version": "0.32.2",
  "num_attention_heads": 4, "attention_head_dim": 32, "in_channels": 16, "out_channels": 16,
  "flip_sin_to_cos": true, "freq_shift": 0, "time_embed_dim": 64, "text_embed_dim": 64, "num_layers": 2,
  "dropout": 0.0, "attention_bias": true, "sample_width": 36, "sample_height": 24, "sample_frames": 25,
  "patch_size": 2, "patch_size_t": null, "temporal_compression_ratio": 4, "max_text_seq_length": 16,
  "activation_fn": "gelu-approximate", "timestep_activation_fn": "silu", "norm_elementwise_affine": true,
  "norm_eps": 1e-05, "spatial_interpolation_scale": 1.875, "temporal_interpolation_scale": 1.0,
  "use_rotary_positional_embeddings": false, "use_learned_positional_embeddings": false, "patch_bias": true})";
const char* kScheduler = R"({"_class_name": "CogVideoXDDIMScheduler", "_diffusers_version": "0.32.2",
  "num_train_timesteps": 1000, "beta_start": 0.00085, "beta_end": 0.012, "beta_schedule": "scaled_linear",
  "clip_sample": false, "set_alpha_to_one": true, "steps_offset": 0, "prediction_type": "v_prediction",
  "timestep_spacing": "trailing", "rescale_betas_zero_snr": true, "snr_shift_scale": 3.0})";
const char* kVae = R"({"_class_name": "AutoencoderKLCogVideoX", "_diffusers_version": "0.32.2",
  "in_channels": 3, "out_channels": 3, "block_out_channels": [16, 16, 32, 32], "latent_channels": 16,
  "layers_per_block": 1, "act_fn": "silu", "norm_eps": 1e-06, "norm_num_groups": 4,
  "temporal_compression_ratio": 4, "sample_height": 192, "sample_width": 288, "scaling_factor": 1.15258426,
  "shift_factor": null, "latents_mean": null, "latents_std": null, "force_upcast": true,
  "use_quant_conv": false, "use_post_quant_conv": false})";

// T5 v1.1 in miniature; d_model is the transformer's text_embed_dim.
const char* kTextEncoder = R"({"architectures": ["T5EncoderModel"], "model_type": "t5", "d_model": 64,
  "d_kv": 16, "num_heads": 4, "d_ff": 128, "num_layers": 2, "relative_attention_num_buckets": 32,
  "relative_attention_max_distance": 128, "layer_norm_epsilon": 1e-06, "feed_forward_proj": "gated-gelu",
  "dense_act_fn": "gelu_new", "is_gated_act": true, "vocab_size": 256, "eos_token_id": 1, "pad_token_id": 0})";

// FLUX.1-dev in miniature: one double-stream and two single-stream blocks, a VAE of two blocks (2x, so
// FluxPipeline's default of 128 latent pixels is 256 x 256 pixels), CLIP and T5 of width 32 and 64.
const char* kFluxIndex = R"({"_class_name": "FluxPipeline", "_diffusers_version": "0.32.2",
  "scheduler": ["diffusers", "FlowMatchEulerDiscreteScheduler"], "transformer": ["diffusers", "FluxTransformer2DModel"],
  "vae": ["diffusers", "AutoencoderKL"], "text_encoder": ["transformers", "CLIPTextModel"],
  "tokenizer": ["transformers", "CLIPTokenizer"], "text_encoder_2": ["transformers", "T5EncoderModel"],
  "tokenizer_2": ["transformers", "T5TokenizerFast"]})";
const char* kFluxTransformer = R"({"_class_name": "FluxTransformer2DModel", "_diffusers_version": "0.32.2",
  "patch_size": 1, "in_channels": 64, "out_channels": null, "num_layers": 1, "num_single_layers": 2,
  "attention_head_dim": 16, "num_attention_heads": 4, "joint_attention_dim": 64, "pooled_projection_dim": 32,
  "guidance_embeds": true, "axes_dims_rope": [4, 6, 6]})";
const char* kFlowMatch = R"({"_class_name": "FlowMatchEulerDiscreteScheduler", "_diffusers_version": "0.32.2",
  "num_train_timesteps": 1000, "shift": 3.0, "use_dynamic_shifting": true, "base_shift": 0.5, "max_shift": 1.15,
  "base_image_seq_len": 256, "max_image_seq_len": 4096})";
const char* kAutoencoderKL = R"({"_class_name": "AutoencoderKL", "_diffusers_version": "0.32.2", "in_channels": 3,
  "out_channels": 3, "block_out_channels": [16, 32], "layers_per_block": 1, "latent_channels": 16,
  "norm_num_groups": 4, "act_fn": "silu", "sample_size": 256, "scaling_factor": 0.3611, "shift_factor": 0.1159,
  "use_quant_conv": false, "use_post_quant_conv": false, "mid_block_add_attention": true, "force_upcast": true})";
const char* kClip = R"({"architectures": ["CLIPTextModel"], "model_type": "clip_text_model", "vocab_size": 514,
  "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
  "max_position_embeddings": 77, "hidden_act": "quick_gelu", "layer_norm_eps": 1e-05, "bos_token_id": 0,
  "eos_token_id": 2, "pad_token_id": 1, "projection_dim": 32})";

void write(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text << "\n";
}

// CLIP's tokenizer/ with the byte alphabet only (no merges: every word is spelt byte by byte), then the
// start and end tokens, as CLIPTokenizer.save_pretrained lays the folder out.
void write_clip_tokenizer(const fs::path& dir) {
  nlohmann::json vocab;
  for (int b = 0; b < 256; ++b) {
    vocab[text::ClipTokenizer::byte_symbol(static_cast<unsigned char>(b))] = b;
    vocab[text::ClipTokenizer::byte_symbol(static_cast<unsigned char>(b)) + "</w>"] = 256 + b;
  }
  vocab["<|startoftext|>"] = 512;
  vocab["<|endoftext|>"] = 513;
  write(dir / "vocab.json", vocab.dump());
  write(dir / "merges.txt", "#version: 0.2");
  write(dir / "tokenizer_config.json",
        R"({"tokenizer_class": "CLIPTokenizer", "model_max_length": 77, "bos_token": "<|startoftext|>",
  "eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>", "unk_token": "<|endoftext|>"})");
}

void make_cogvideox(const fs::path& tmp, const fs::path& t5_tokenizer) {
  write(tmp / "model_index.json", kModelIndex);
  write(tmp / "transformer" / "config.json", kTransformer);
  write(tmp / "scheduler" / "scheduler_config.json", kScheduler);
  write(tmp / "vae" / "config.json", kVae);
  write(tmp / "text_encoder" / "config.json", kTextEncoder);
  fs::copy(t5_tokenizer, tmp / "tokenizer", fs::copy_options::recursive);
  const auto folder = plan::read_model_folder(tmp.string());  // the configs pass our own checks

  auto tw = io::WeightSet::synthetic(1);
  const auto& parts = folder.parts_as<plan::CogVideoXParts>();
  models::CogVideoXTransformer::load(tw, parts.transformer, at::kFloat, at::kCPU);
  tw.save((tmp / "transformer" / "diffusion_pytorch_model.safetensors").string());
  auto vw = io::WeightSet::synthetic(2);
  models::CogVideoXVae::load(vw, *parts.vae, at::kFloat, at::kCPU);
  vw.save((tmp / "vae" / "diffusion_pytorch_model.safetensors").string());
  auto ew = io::WeightSet::synthetic(3);
  text::T5Encoder::load(ew, *folder.text_encoder, at::kFloat, at::kCPU);
  ew.save((tmp / "text_encoder" / "model.safetensors").string());
}

void make_flux(const fs::path& tmp, const fs::path& t5_tokenizer) {
  write(tmp / "model_index.json", kFluxIndex);
  write(tmp / "transformer" / "config.json", kFluxTransformer);
  write(tmp / "scheduler" / "scheduler_config.json", kFlowMatch);
  write(tmp / "vae" / "config.json", kAutoencoderKL);
  write(tmp / "text_encoder" / "config.json", kClip);
  write(tmp / "text_encoder_2" / "config.json", kTextEncoder);
  write_clip_tokenizer(tmp / "tokenizer");
  fs::copy(t5_tokenizer, tmp / "tokenizer_2", fs::copy_options::recursive);
  const auto folder = plan::read_model_folder(tmp.string());

  auto tw = io::WeightSet::synthetic(4);
  const auto& parts = folder.parts_as<plan::FluxParts>();
  models::FluxTransformer::load(tw, parts.transformer, at::kFloat, at::kCPU);
  tw.save((tmp / "transformer" / "diffusion_pytorch_model.safetensors").string());
  auto vw = io::WeightSet::synthetic(5);
  models::AutoencoderKL::load(vw, *parts.vae, at::kFloat, at::kCPU);
  vw.save((tmp / "vae" / "diffusion_pytorch_model.safetensors").string());
  auto cw = io::WeightSet::synthetic(6);
  text::ClipTextEncoder::load(cw, *parts.clip, at::kFloat, at::kCPU);
  cw.save((tmp / "text_encoder" / "model.safetensors").string());
  auto ew = io::WeightSet::synthetic(7);
  text::T5Encoder::load(ew, *folder.text_encoder, at::kFloat, at::kCPU);
  ew.save((tmp / "text_encoder_2" / "model.safetensors").string());
}

}  // namespace

int main(int argc, char** argv) {
  const bool flux = argc == 4 && std::string(argv[1]) == "--flux";
  if (argc != 3 && !flux) {
    std::cerr << "usage: dit-make-demo-model [--flux] OUT_DIR TOKENIZER_DIR\n";
    return 2;
  }
  try {
    const fs::path out = fs::path(argv[argc - 2]);
    const fs::path tmp = out.string() + ".partial";
    fs::remove_all(tmp);
    if (flux) make_flux(tmp, argv[argc - 1]);
    else make_cogvideox(tmp, argv[argc - 1]);
    fs::remove_all(out);
    fs::rename(tmp, out);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "dit-make-demo-model: " << e.what() << "\n";
    return 1;
  }
}

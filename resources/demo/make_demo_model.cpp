// Makes the built-in demo model: a small CogVideoX-2B-shaped diffusers folder with deterministic random
// weights (a few MB) and a tiny T5 text encoder, so that dit-launch and the studio run on a fresh machine
// with no download. Random weights make abstract motion, not pictures.
// Usage: dit-make-demo-model OUT_DIR TOKENIZER_DIR (the tokenizer made by dit-make-demo-tokenizer)
#include <filesystem>
#include <fstream>
#include <iostream>

#include "io/weights.h"
#include "models/cogvideox_transformer.h"
#include "models/cogvideox_vae.h"
#include "plan/error.h"
#include "text/t5_encoder.h"

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

void write(const fs::path& file, const char* text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: dit-make-demo-model OUT_DIR TOKENIZER_DIR\n";
    return 2;
  }
  try {
    const fs::path out = fs::path(argv[1]);
    const fs::path tmp = out.string() + ".partial";
    fs::remove_all(tmp);
    write(tmp / "model_index.json", kModelIndex);
    write(tmp / "transformer" / "config.json", kTransformer);
    write(tmp / "scheduler" / "scheduler_config.json", kScheduler);
    write(tmp / "vae" / "config.json", kVae);
    write(tmp / "text_encoder" / "config.json", kTextEncoder);
    fs::copy(argv[2], tmp / "tokenizer", fs::copy_options::recursive);
    const auto folder = plan::read_model_folder(tmp.string());  // the configs pass our own checks

    auto tw = io::WeightSet::synthetic(1);
    models::CogVideoXTransformer::load(tw, folder.transformer, at::kFloat, at::kCPU);
    tw.save((tmp / "transformer" / "diffusion_pytorch_model.safetensors").string());
    auto vw = io::WeightSet::synthetic(2);
    models::CogVideoXVae::load(vw, *folder.vae, at::kFloat, at::kCPU);
    vw.save((tmp / "vae" / "diffusion_pytorch_model.safetensors").string());

    auto ew = io::WeightSet::synthetic(3);
    text::T5Encoder::load(ew, *folder.text_encoder, at::kFloat, at::kCPU);
    ew.save((tmp / "text_encoder" / "model.safetensors").string());
    fs::remove_all(out);
    fs::rename(tmp, out);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "dit-make-demo-model: " << e.what() << "\n";
    return 1;
  }
}

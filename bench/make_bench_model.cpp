// Writes a CogVideoX-2B-shaped diffusers folder with random weights for benchmarks: the real config
// (30 heads x 64, width 1920, text 4096 -> 226 tokens, 480 x 720 x 49 frames) with `--layers N` blocks
// (the real model has 30), and prompt embeddings for it. `--height --width --num_frames` change the
// sample size in the configs (pixels and frames: dit-launch's defaults); `--vae` adds vae/ with the real
// CogVideoX-2b VAE config and random weights, so that diffusers can load the folder too.
// Usage: bench-make-model OUT_DIR [--layers N] [--height H --width W --num_frames F] [--vae]
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "io/tensor_file.h"
#include "io/weights.h"
#include "models/cogvideox_transformer.h"
#include "models/cogvideox_vae.h"
#include "plan/model_folder.h"
#include "sampling/noise.h"

namespace fs = std::filesystem;
using namespace studio;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: bench-make-model OUT_DIR [--layers N] [--height H --width W --num_frames F] [--vae]\n";
    return 2;
  }
  int layers = 30, height = 480, width = 720, frames = 49;
  bool vae = false;
  for (int i = 2; i < argc; ++i) {
    const bool value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--vae")) vae = true;
    else if (value && !std::strcmp(argv[i], "--layers")) layers = std::atoi(argv[++i]);
    else if (value && !std::strcmp(argv[i], "--height")) height = std::atoi(argv[++i]);
    else if (value && !std::strcmp(argv[i], "--width")) width = std::atoi(argv[++i]);
    else if (value && !std::strcmp(argv[i], "--num_frames")) frames = std::atoi(argv[++i]);
    else return std::cerr << "bench-make-model: unknown or incomplete option " << argv[i] << "\n", 2;
  }
  const fs::path out(argv[1]);
  fs::create_directories(out / "transformer");
  fs::create_directories(out / "scheduler");
  std::ofstream(out / "model_index.json") << R"({"_class_name": "CogVideoXPipeline", "scheduler": ["diffusers",
    "CogVideoXDDIMScheduler"], "transformer": ["diffusers", "CogVideoXTransformer3DModel"])"
                                          << (vae ? R"(, "vae": ["diffusers", "AutoencoderKLCogVideoX"]})" : "}");
  std::ofstream(out / "transformer" / "config.json")
      << R"({"_class_name": "CogVideoXTransformer3DModel", "num_attention_heads": 30, "attention_head_dim": 64,
    "in_channels": 16, "out_channels": 16, "time_embed_dim": 512, "text_embed_dim": 4096, "num_layers": )"
      << layers << R"(, "sample_width": )" << width / 8 << R"(, "sample_height": )" << height / 8
      << R"(, "sample_frames": )" << frames << R"(, "patch_size": 2,
    "max_text_seq_length": 226, "use_rotary_positional_embeddings": false})";
  // CogVideoX-2b's scheduler config in full: diffusers' class defaults for missing fields are not its values.
  std::ofstream(out / "scheduler" / "scheduler_config.json")
      << R"({"_class_name": "CogVideoXDDIMScheduler", "num_train_timesteps": 1000, "beta_start": 0.00085,
    "beta_end": 0.012, "beta_schedule": "scaled_linear", "clip_sample": false, "set_alpha_to_one": true,
    "steps_offset": 0, "prediction_type": "v_prediction", "timestep_spacing": "trailing",
    "rescale_betas_zero_snr": true, "snr_shift_scale": 3.0})";
  if (vae) {
    fs::create_directories(out / "vae");
    std::ofstream(out / "vae" / "config.json") << R"({"_class_name": "AutoencoderKLCogVideoX", "act_fn": "silu",
    "block_out_channels": [128, 256, 256, 512], "down_block_types": ["CogVideoXDownBlock3D", "CogVideoXDownBlock3D",
    "CogVideoXDownBlock3D", "CogVideoXDownBlock3D"], "force_upcast": true, "in_channels": 3, "latent_channels": 16,
    "latents_mean": null, "latents_std": null, "layers_per_block": 3, "norm_eps": 1e-06, "norm_num_groups": 32,
    "out_channels": 3, "sample_height": 480, "sample_width": 720, "scaling_factor": 1.15258426,
    "shift_factor": null, "temporal_compression_ratio": 4, "up_block_types": ["CogVideoXUpBlock3D",
    "CogVideoXUpBlock3D", "CogVideoXUpBlock3D", "CogVideoXUpBlock3D"], "use_post_quant_conv": false,
    "use_quant_conv": false})";
  }
  const auto folder = plan::read_model_folder(out.string());
  auto w = io::WeightSet::synthetic(11);
  models::CogVideoXTransformer::load(w, folder.transformer, at::kFloat, at::kCPU);
  w.save((out / "transformer" / "diffusion_pytorch_model.safetensors").string());
  if (vae) {  // the decoder only: the engine has no encoder (diffusers' encoder stays unloaded)
    auto vw = io::WeightSet::synthetic(13);
    models::CogVideoXVae::load(vw, *folder.vae, at::kFloat, at::kCPU);
    vw.save((out / "vae" / "diffusion_pytorch_model.safetensors").string());
  }
  sampling::SeededNoise noise(12);
  io::save_tensors((out / "embeds.safetensors").string(),
                   {{"prompt_embeds", noise.draw({1, 226, 4096})}, {"negative_prompt_embeds", noise.draw({1, 226, 4096})}});
  std::cout << "wrote " << out.string() << " (" << layers << " layers" << (vae ? ", vae" : "") << ")\n";
  return 0;
}

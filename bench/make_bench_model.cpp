// Writes a CogVideoX-2B-shaped diffusers folder with random weights for benchmarks: the real config
// (30 heads x 64, width 1920, text 4096 -> 226 tokens, 480 x 720 x 49 frames) with `--layers N` blocks
// (the real model has 30), and prompt embeddings for it. Usage: bench-make-model OUT_DIR [--layers N]
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "io/tensor_file.h"
#include "io/weights.h"
#include "models/cogvideox_transformer.h"
#include "plan/model_folder.h"
#include "sampling/noise.h"

namespace fs = std::filesystem;
using namespace studio;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: bench-make-model OUT_DIR [--layers N]\n";
    return 2;
  }
  int layers = 30;
  for (int i = 2; i + 1 < argc; i += 2)
    if (!std::strcmp(argv[i], "--layers")) layers = std::atoi(argv[i + 1]);
  const fs::path out(argv[1]);
  fs::create_directories(out / "transformer");
  fs::create_directories(out / "scheduler");
  std::ofstream(out / "model_index.json") << R"({"_class_name": "CogVideoXPipeline", "scheduler": ["diffusers",
    "CogVideoXDDIMScheduler"], "transformer": ["diffusers", "CogVideoXTransformer3DModel"]})";
  std::ofstream(out / "transformer" / "config.json")
      << R"({"_class_name": "CogVideoXTransformer3DModel", "num_attention_heads": 30, "attention_head_dim": 64,
    "in_channels": 16, "out_channels": 16, "time_embed_dim": 512, "text_embed_dim": 4096, "num_layers": )"
      << layers << R"(, "sample_width": 90, "sample_height": 60, "sample_frames": 49, "patch_size": 2,
    "max_text_seq_length": 226, "use_rotary_positional_embeddings": false})";
  std::ofstream(out / "scheduler" / "scheduler_config.json")
      << R"({"_class_name": "CogVideoXDDIMScheduler", "snr_shift_scale": 3.0, "rescale_betas_zero_snr": true})";
  const auto folder = plan::read_model_folder(out.string());
  auto w = io::WeightSet::synthetic(11);
  models::CogVideoXTransformer::load(w, folder.transformer, at::kFloat, at::kCPU);
  w.save((out / "transformer" / "diffusion_pytorch_model.safetensors").string());
  sampling::SeededNoise noise(12);
  io::save_tensors((out / "embeds.safetensors").string(),
                   {{"prompt_embeds", noise.draw({1, 226, 4096})}, {"negative_prompt_embeds", noise.draw({1, 226, 4096})}});
  std::cout << "wrote " << out.string() << " (" << layers << " layers)\n";
  return 0;
}

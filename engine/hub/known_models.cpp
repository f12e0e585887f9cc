#include "hub/known_models.h"

namespace studio::hub {

// Download sizes: the Hub's file listings (huggingface.co/REPO/tree/main, in GB of 10^9 bytes) summed over
// what download_repo fetches: the folders model_index.json names, never the single-file checkpoints
// beside them (FLUX.1's flux1-*.safetensors and ae.safetensors). Where a listing was not at hand, a
// component is counted as the same file in a sibling repo (said in the comment).
// GPU memory: the model card's single-GPU figure where it gives one; where it does not, the bf16 weights
// of the transformer alone, a floor (activations and the VAE decode come on top).
const std::vector<KnownModel>& known_models() {
  static const std::vector<KnownModel> all = {
      // transformer 3.4 + text_encoder (T5-XXL) 9.5 + vae (fp32) 0.86: the repo's listing says 13.8 GB.
      {"CogVideoX", "CogVideoX-2b", "THUDM/CogVideoX-2b", 13.8, 18,
       "FP16, everything on the GPU (model card: 18 GB with SAT; 12.5 GB with diffusers' CPU offload and VAE "
       "tiling)",
       false},
      // transformer 9.93 + 1.22; T5-XXL as CogVideoX-2b's (9.5); the VAE in bf16 (0.43; 2b's is now fp32).
      {"CogVideoX", "CogVideoX-5b", "THUDM/CogVideoX-5b", 21.1, 26,
       "BF16, everything on the GPU (model card: 26 GB with SAT; 20.7 GB with diffusers' CPU offload and VAE "
       "tiling)",
       false},
      // transformer 4.98 + 4.95 + 1.22 (Kijai/CogVideoX-5b-1.5's listing of the same 5B transformer); T5-XXL
      // and VAE as CogVideoX-5b's.
      {"CogVideoX", "CogVideoX1.5-5B", "THUDM/CogVideoX1.5-5B", 21.1, 9,
       "BF16 with diffusers' CPU offload and VAE tiling: the model card's minimum; more with everything on the GPU",
       false},
      // transformer 23.8 (bf16, 12B) + text_encoder_2 (T5-XXL) 9.52 + text_encoder (CLIP-L) 0.25 + vae 0.17.
      {"FLUX.1", "FLUX.1-dev", "black-forest-labs/FLUX.1-dev", 33.7, 24,
       "the bf16 transformer's weights alone (the model card gives no figure); activations come on top", true},
      {"FLUX.1", "FLUX.1-schnell", "black-forest-labs/FLUX.1-schnell", 33.7, 24,
       "the bf16 transformer's weights alone (the model card gives no figure); activations come on top", false},
      // transformer 5.68 (fp32) + text_encoder (umT5-XXL, fp32) 22.7 + vae 0.51 (FastVideo's copy of it).
      {"Wan", "Wan2.1-T2V-1.3B", "Wan-AI/Wan2.1-T2V-1.3B-Diffusers", 28.9, 8.19,
       "480p with the model offloaded and T5 on the CPU (model card, on an RTX 4090)", false},
      // transformer 14B in fp32 (12 shards of about 4.9 GB: 57) + umT5-XXL 22.7 + vae 0.51.
      {"Wan", "Wan2.1-T2V-14B", "Wan-AI/Wan2.1-T2V-14B-Diffusers", 80.2, 28.6,
       "the bf16 transformer's weights alone (28.6 GB); activations at 720p come on top", false},
      // two 14B experts as above (57 each) + umT5-XXL 22.7 + vae 0.51; the engine holds one expert at a time.
      {"Wan", "Wan2.2-T2V-A14B", "Wan-AI/Wan2.2-T2V-A14B-Diffusers", 137.2, 28.6,
       "one expert's bf16 weights (the engine loads the second after releasing the first); activations on top", false},
  };
  return all;
}

}  // namespace studio::hub

// The models the engine runs, as the studio's Models view offers them: repo id, what a download brings
// and the GPU memory one needs. One table, torch-free; the numbers and where each comes from are in
// known_models.cpp.
#pragma once
#include <string>
#include <vector>

namespace studio::hub {

struct KnownModel {
  std::string family;       // "CogVideoX", "FLUX.1", "Wan": as list_cache names a cached repo's family
  std::string name;         // "CogVideoX-2b"
  std::string repo_id;      // "THUDM/CogVideoX-2b"
  double download_gb = 0;   // what download_repo fetches (the components' safetensors and configs), 10^9 bytes
  double gpu_memory_gb = 0; // one GPU's memory for the default job at the recommended dtype
  std::string memory_note;  // what that figure assumes, and its source
  bool gated = false;       // needs a token and the license accepted on the model's page
};

const std::vector<KnownModel>& known_models();

}  // namespace studio::hub

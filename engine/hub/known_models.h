// The models the engine runs, as the studio's Models view offers them: repo id, what a download brings
// and the GPU memory one needs. Torch-free; each family's rows, and where their numbers come from, are in
// its file (plan/families/<name>.cpp, Family::known_repos).
#pragma once
#include <string>
#include <vector>

#include "plan/family.h"

namespace studio::hub {

// A family's repository (plan::KnownRepo) and the family's name.
struct KnownModel : plan::KnownRepo {
  std::string family;  // "CogVideoX", "FLUX.1", "Wan": as list_cache names a cached repo's family
};

const std::vector<KnownModel>& known_models();

}  // namespace studio::hub

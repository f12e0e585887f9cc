// A byte count as people read it: "512 B", "1.5 GiB" (binary units, one decimal). The one way the studio,
// the launcher and dit-models write sizes.
#pragma once
#include <cstdint>
#include <string>

namespace studio::plan {

std::string human_bytes(uint64_t bytes);

}  // namespace studio::plan

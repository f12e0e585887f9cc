// A byte count as people read it: whole bytes below a KiB, else binary units with one decimal. The one way
// the studio, the launcher and dit-models write sizes.
#pragma once
#include <cstdint>
#include <string>

namespace studio::plan {

std::string human_bytes(uint64_t bytes);

}  // namespace studio::plan

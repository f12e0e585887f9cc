// Sizes and numbers as people read them. A byte count: whole bytes below a KiB, else binary units with one
// decimal; the one way the studio, the launcher and dit-models write sizes.
#pragma once
#include <cstdint>
#include <string>

namespace studio::plan {

std::string human_bytes(uint64_t bytes);

// A number as a user wrote it: "-5", "0.05", "5000" (shortest form, no trailing zeros).
std::string short_number(double x);

}  // namespace studio::plan

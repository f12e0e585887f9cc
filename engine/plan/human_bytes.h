// Numbers as people read them. A byte count: whole bytes below a KiB, else binary units with one decimal (the one
// way the studio, the launcher and dit-models write sizes); a count of things with its noun ("1 step", "2 steps").
#pragma once
#include <cstdint>
#include <string>

namespace studio::plan {

std::string human_bytes(uint64_t bytes);
std::string counted(long long n, const char* one, const char* many);

}  // namespace studio::plan

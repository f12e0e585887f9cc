#include "plan/error.h"

namespace studio {

bool is_out_of_memory(const std::string& what) {
  // LibTorch's CPU and CUDA allocators and the C++ runtime, in 1.13 and 2.x alike.
  for (const char* w : {"out of memory", "can't allocate memory", "Cannot allocate memory", "std::bad_alloc"})
    if (what.find(w) != std::string::npos) return true;
  return false;
}

}  // namespace studio

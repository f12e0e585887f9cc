// A whole file mapped read-only, the one way the safetensors and GGUF readers open what they check. The caller
// unmaps it (munmap(data, size)) when done.
#pragma once
#include <cstdint>
#include <string>

namespace studio::io {

struct Mapping {
  void* data = nullptr;
  uint64_t size = 0;
};

// InputError naming `path` when it is missing, cannot be opened or mapped, is not a regular file, or is shorter
// than `min_bytes` ("truncated: N bytes, shorter than " + `minimum`).
Mapping map_whole_file(const std::string& path, uint64_t min_bytes, const std::string& minimum);

}  // namespace studio::io

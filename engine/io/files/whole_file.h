// Writing a file whole or not at all: what `write` puts goes to a temporary file in the same folder, which is
// synced and renamed into place only when complete. On a failure (the folder not writable, the disk full) the
// temporary is removed and InputError names `path` and the OS's reason. The safetensors and GGUF writers share it.
#pragma once
#include <cstddef>
#include <functional>
#include <string>

namespace studio::io {

using PutBytes = std::function<void(const void* data, size_t bytes)>;
void write_whole_file(const std::string& path, const std::function<void(const PutBytes& put)>& write);

}  // namespace studio::io

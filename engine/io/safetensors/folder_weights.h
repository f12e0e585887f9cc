// A model folder's weight files checked before a run, from their headers alone: every shard that an
// index names is there, and every safetensors file reads and holds all the data its header describes.
// A download cut short is found in milliseconds and named, not after seconds of loading.
#pragma once
#include <string>
#include <vector>

namespace studio::io {

// One line per problem, each starting with the file's path relative to `dir`; empty when all is well.
std::vector<std::string> weight_file_problems(const std::string& dir);

}  // namespace studio::io

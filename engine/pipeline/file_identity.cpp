#include "pipeline/file_identity.h"

#include <algorithm>
#include <filesystem>
#include <vector>

namespace studio::pipeline {

std::string file_identity(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  const auto written = std::filesystem::last_write_time(path, ec).time_since_epoch().count();
  return path + "|" + std::to_string(size) + "|" + std::to_string(written);
}

std::string part_identity(const plan::ModelFolder& folder, const std::string& part) {
  if (const auto file = folder.weight_files.find(part); file != folder.weight_files.end())
    return file_identity(file->second) + "\n";
  std::error_code ec;
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(plan::part_path(folder, part), ec))
    files.push_back(file_identity(entry.path().string()));
  std::sort(files.begin(), files.end());
  std::string out;
  for (const auto& f : files) out += f + "\n";
  return out;
}

}  // namespace studio::pipeline

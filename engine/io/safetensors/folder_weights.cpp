#include "io/safetensors/folder_weights.h"

#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "io/safetensors/safetensors_file.h"
#include "plan/model_folder.h"

namespace fs = std::filesystem;

namespace studio::io {

namespace {

bool ends_with(const std::string& s, const std::string& end) {
  return s.size() >= end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
}

// The folder's problems name the file from the folder (a reader's message may start with its full path).
std::string from_folder(const std::string& message, const fs::path& file, const fs::path& dir) {
  const std::string full = file.string(), relative = file.lexically_relative(dir).string();
  return message.rfind(full, 0) == 0 ? relative + message.substr(full.size()) : relative + ": " + message;
}

}  // namespace

std::vector<std::string> weight_file_problems(const std::string& dir) {
  std::vector<std::string> problems;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const fs::path& file = it->path();
    const std::string name = file.filename().string();
    if (ends_with(name, ".safetensors")) {
      try {
        SafetensorsFile::open(file.string());
      } catch (const std::exception& e) {
        problems.push_back(from_folder(e.what(), file, dir));
      }
    } else if (ends_with(name, ".safetensors.index.json")) {
      try {
        const auto index = nlohmann::json::parse(plan::read_text_file(file.string(), 64 << 20));
        std::set<std::string> shards;
        for (const auto& [tensor, shard] : index.at("weight_map").items()) shards.insert(shard.get<std::string>());
        for (const auto& s : shards)
          if (!fs::exists(file.parent_path() / s))
            problems.push_back((file.parent_path() / s).lexically_relative(dir).string() + ": named by " + name +
                               ", missing (not downloaded or copied yet?)");
      } catch (const std::exception& e) {
        problems.push_back(from_folder(e.what(), file, dir));
      }
    }
  }
  return problems;
}

}  // namespace studio::io

#include "plan/lora_choice.h"

#include <algorithm>
#include <cmath>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "plan/family.h"
#include "plan/single_file.h"

namespace studio::plan {

namespace {

namespace fs = std::filesystem;

std::string lower(std::string s) {
  for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The scale after the last ':', when what follows it is a whole number (strtod reads all of it).
bool split_scale(const std::string& entry, std::string& file, double& scale) {
  const auto colon = entry.rfind(':');
  if (colon == std::string::npos || colon + 1 == entry.size()) return false;
  const std::string tail = entry.substr(colon + 1);
  char* end = nullptr;
  const double v = std::strtod(tail.c_str(), &end);
  if (end != tail.c_str() + tail.size()) return false;
  file = entry.substr(0, colon);
  scale = v;
  return true;
}

}  // namespace

std::vector<LoraUse> parse_loras(const std::string& list, const std::string& flag) {
  std::vector<LoraUse> out;
  size_t start = 0;
  while (start <= list.size()) {
    const auto comma = list.find(',', start);
    const std::string entry = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!entry.empty()) {
      LoraUse u{entry, 1.0, flag};
      split_scale(entry, u.file, u.scale);
      out.push_back(u);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string add_lora(const std::string& list, const std::string& entry) {
  return list.empty() ? entry : list + "," + entry;
}

void check_loras(const JobSpec& job, const ModelFolder& model, std::vector<Problem>& out) {
  for (const auto& [flag, list] : {std::pair{"lora", &job.lora}, std::pair{"lora_2", &job.lora_2}}) {
    std::vector<std::string> seen;
    for (const auto& u : parse_loras(*list)) {
      const std::string given = "--" + std::string(flag) + " " + u.file;
      if (std::find(seen.begin(), seen.end(), u.file) != seen.end()) {
        out.push_back({flag, given + ": given twice, so it would apply twice (its strengths added up); give it once, "
                                     "with the strength you want"});
        continue;
      }
      seen.push_back(u.file);
      if (!std::isfinite(u.scale))
        out.push_back({flag, given + ": the strength after the last ':' is not a finite number (it reads as " +
                                     std::to_string(u.scale) + "); give FILE:0.8, or FILE alone for 1"});
      else if (const auto colon = u.file.rfind(':');
               !fs::exists(u.file) && colon != std::string::npos && fs::is_regular_file(u.file.substr(0, colon)))
        out.push_back({flag, given + ": the strength '" + u.file.substr(colon + 1) + "' after the last ':' is not a "
                                     "number; give FILE:0.8, or FILE alone for 1"});
      else if (!fs::is_regular_file(u.file) || !std::ifstream(u.file, std::ios::binary))
        out.push_back({flag, given + ": cannot be read (no such file, or not a file); give a LoRA .safetensors "
                                     "file, with :SCALE after it for a strength other than 1"});
      else if (!ends_with(lower(u.file), ".safetensors"))
        out.push_back({flag, given + ": LoRAs are read from .safetensors files (diffusers/PEFT, kohya, ComfyUI, "
                                     "musubi-tuner); this one is not"});
    }
  }
  if (!job.lora_2.empty() && rules_of(model).second_expert_boundary(model) <= 0)
    out.push_back({"lora_2", "--lora_2: LoRAs for the second expert (Wan2.2's transformer_2/); " + model.dir +
                                 " has one transformer, so give --lora alone"});
}

}  // namespace studio::plan

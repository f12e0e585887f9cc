// The "parameters" text of a written PNG: plain strings, so it is here in a build without FFmpeg too.
#include <cstdio>
#include <map>
#include <string>
#include <utility>

#include "plan/lora_choice.h"
#include "video/image_writer.h"

namespace studio::video {

std::string parameters_text(const std::map<std::string, std::string>& m) {
  auto field = [&](const char* key) {
    const auto it = m.find(key);
    return it == m.end() ? std::string() : it->second;
  };
  // The LoRAs as image tools write them in the prompt, <lora:NAME:STRENGTH>, and their files' hashes after.
  std::string text = field("prompt"), loras, hashes;
  std::string sums = field("lora_sha256");
  for (const auto& use : plan::parse_loras(field("lora"))) {
    std::string name = use.file.substr(use.file.find_last_of("/\\") + 1);
    if (name.size() > 12 && name.compare(name.size() - 12, 12, ".safetensors") == 0) name.resize(name.size() - 12);
    char strength[32];
    std::snprintf(strength, sizeof strength, "%g", use.scale);
    loras += " <lora:" + name + ":" + strength + ">";
    const std::string sum = sums.substr(0, sums.find(','));
    sums = sums.find(',') == std::string::npos ? std::string() : sums.substr(sums.find(',') + 1);
    if (!sum.empty()) hashes += (hashes.empty() ? "" : ", ") + name + ": " + sum;
  }
  text += loras;
  if (!field("prompt_2").empty()) text += "\nPrompt 2: " + field("prompt_2");
  if (!field("negative_prompt").empty()) text += "\nNegative prompt: " + field("negative_prompt");
  std::string settings;
  for (auto [label, key] : {std::pair{"Steps", "num_inference_steps"}, std::pair{"Sampler", "sampler"},
                            std::pair{"Guidance", "guidance_scale"}, std::pair{"Seed", "seed"},
                            std::pair{"Model", "model"}, std::pair{"Family", "model_family"},
                            std::pair{"Parallel", "parallel"}, std::pair{"Dtype", "dtype"},
                            std::pair{"Generator", "generator"}})
    if (!field(key).empty()) settings += (settings.empty() ? "" : ", ") + std::string(label) + ": " + field(key);
  if (!field("width").empty())
    settings += (settings.empty() ? "" : ", ") + std::string("Size: ") + field("width") + "x" + field("height");
  for (auto [label, key] : {std::pair{"First-Block Cache", "use_fbcache"}, std::pair{"TeaCache", "use_teacache"},
                            std::pair{"MagCache", "use_magcache"}})
    if (field(key) == "true")
      settings += (settings.empty() ? "" : ", ") + std::string("Step cache: ") + label + " " + field("cache_threshold");
  if (!hashes.empty()) settings += (settings.empty() ? "" : ", ") + std::string("LoRA hashes: \"") + hashes + "\"";
  return text.empty() ? settings : text + "\n" + settings;
}

}  // namespace studio::video

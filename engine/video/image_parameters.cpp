// The "parameters" text of a written PNG: plain strings, so it is here in a build without FFmpeg too.
#include <map>
#include <string>
#include <utility>

#include "video/image_writer.h"

namespace studio::video {

std::string parameters_text(const std::map<std::string, std::string>& m) {
  auto field = [&](const char* key) {
    const auto it = m.find(key);
    return it == m.end() ? std::string() : it->second;
  };
  std::string text = field("prompt");
  if (!field("prompt_2").empty()) text += "\nPrompt 2: " + field("prompt_2");
  if (!field("negative_prompt").empty()) text += "\nNegative prompt: " + field("negative_prompt");
  std::string settings;
  for (auto [label, key] : {std::pair{"Steps", "num_inference_steps"}, std::pair{"Sampler", "sampler"},
                            std::pair{"Guidance", "guidance_scale"}, std::pair{"Seed", "seed"},
                            std::pair{"Model", "model"}, std::pair{"Family", "model_family"},
                            std::pair{"Parallel", "parallel"}, std::pair{"Generator", "generator"}})
    if (!field(key).empty()) settings += (settings.empty() ? "" : ", ") + std::string(label) + ": " + field(key);
  if (!field("width").empty())
    settings += (settings.empty() ? "" : ", ") + std::string("Size: ") + field("width") + "x" + field("height");
  return text.empty() ? settings : text + "\n" + settings;
}

}  // namespace studio::video

#include "plan/single_file.h"

namespace studio::plan {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

std::string without_checkpoint_prefix(const std::string& name) {
  for (const char* prefix : {"model.diffusion_model.", "diffusion_model."})
    if (name.rfind(prefix, 0) == 0) return name.substr(std::string(prefix).size());
  return name;
}

ScaleTensor scale_tensor(const std::string& name) {
  if (name == "scaled_fp8" || ends_with(name, ".scale_input")) return {true, ""};
  if (ends_with(name, ".scale_weight")) return {true, name.substr(0, name.size() - 13) + ".weight"};
  return {};
}

}  // namespace studio::plan

#include "io/safetensors/single_file_kind.h"

#include <exception>

#include "plan/single_file.h"

namespace studio::io {

LoraFit lora_fit_if_any(const std::string& file) {
  try {
    if (plan::ends_with(file, ".safetensors")) return lora_fit_of(file);
  } catch (const std::exception&) {
    // unreadable: the run names why
  }
  return {};
}

std::string single_file_kind(const std::string& file) {
  const LoraFit fit = lora_fit_if_any(file);
  if (!fit.is_lora) return "single file";
  return fit.families.empty() ? "LoRA" : "LoRA for " + describe(fit);
}

}  // namespace studio::io

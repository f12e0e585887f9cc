#include "io/safetensors/lora_files.h"

#include "io/safetensors/safetensors_file.h"
#include "plan/lora_choice.h"

namespace studio::io {

plan::LoraFit lora_fit_of(const std::string& file) {
  std::vector<plan::TensorShape> tensors;
  const auto header = SafetensorsFile::open(file);
  for (const auto& t : header->tensors()) tensors.push_back({t.name, t.shape});
  return plan::lora_fit(tensors);
}

void check_lora_fits(const plan::JobSpec& job, const plan::ModelFolder& model, std::vector<plan::Problem>& out) {
  for (const auto& [flag, list] : {std::pair{"lora", &job.lora}, std::pair{"lora_2", &job.lora_2}})
    for (const auto& use : plan::parse_loras(*list)) {
      plan::LoraFit fit;
      try {
        fit = lora_fit_of(use.file);
      } catch (const std::exception&) {
        continue;  // unreadable: check_loras names it
      }
      if (const auto why = plan::lora_mismatch(fit, model, "--" + std::string(flag) + " " + use.file); !why.empty())
        out.push_back({flag, why});
    }
}

}  // namespace studio::io

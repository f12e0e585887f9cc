// LoRA files read by their headers alone (no tensor is loaded): the family each fits (plan/lora_fit.h), and the
// job's LoRAs that cannot change its model, as problems of the job, so that dit-launch, a worker and the studio
// refuse them before any work, in the same words.
#pragma once
#include <string>
#include <vector>

#include "plan/job.h"
#include "plan/lora_fit.h"

namespace studio::io {

// InputError when the file is not a readable safetensors file.
plan::LoraFit lora_fit_of(const std::string& file);
// Adds a problem for each LoRA of the job (--lora, --lora_2) made for another family or size; files that cannot
// be read are plan::check_loras' to name.
void check_lora_fits(const plan::JobSpec& job, const plan::ModelFolder& model, std::vector<plan::Problem>& out);

}  // namespace studio::io

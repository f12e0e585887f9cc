// The LoRAs a job applies: --lora FILE[:SCALE], repeated (each one's strength, default 1), and --lora_2 for
// Wan2.2's second expert, as diffusers' load_lora_weights and set_adapters apply them. The job keeps each list as
// "FILE[:SCALE]" entries joined by commas (what the repeated flag and the job file hold); checked with the rest
// of the job before any work, then put on the folder the loaders read (ModelFolder::loras).
#pragma once
#include <string>
#include <vector>

#include "plan/job.h"
#include "plan/model_folder.h"

namespace studio::plan {

// "a.safetensors:0.8,b.safetensors" -> {a, 0.8}, {b, 1}. The scale is what follows the last ':' when it is a
// number (so "C:\\loras\\x.safetensors" is a file); a malformed scale stays part of the name and check_loras
// says so. `flag` is the one the list came from, for messages.
std::vector<LoraUse> parse_loras(const std::string& list, const std::string& flag = "--lora");
// Appends one --lora value to a list (the flag repeated).
std::string add_lora(const std::string& list, const std::string& entry);
void check_loras(const JobSpec& job, const ModelFolder& model, std::vector<Problem>& out);

}  // namespace studio::plan

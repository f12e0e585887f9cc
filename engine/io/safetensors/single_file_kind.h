// What a file of a repository of single files is, from its header alone: a LoRA (and the family it fits) or a
// checkpoint. dit-models and the studio's Models tab say it in the same words.
#pragma once
#include <string>

#include "io/safetensors/lora_files.h"

namespace studio::io {

// The fit of a .safetensors LoRA file; not a LoRA for any other file, or one that cannot be read.
LoraFit lora_fit_if_any(const std::string& file);
// "LoRA for FLUX.1, width 3072", "LoRA" (its blocks no family's), or "single file" (a checkpoint, a GGUF, or a file
// that cannot be read).
std::string single_file_kind(const std::string& file);

}  // namespace studio::io

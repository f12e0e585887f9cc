// Which family a LoRA file was made for, from its tensors' names and shapes alone: for the Models tab's listing
// and for a check before any work (dit-launch, the studio's compose list). The families' own block names
// (Family::names_lora_module) and the width its attention's A matrices read. A first look that needs no model
// loaded; the loader's merge (models/lora.h) still checks every module against the real weights.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "plan/model_folder.h"

namespace studio::plan {

struct TensorShape {
  std::string name;
  std::vector<int64_t> shape;
};

struct LoraFit {
  std::vector<std::string> families;  // the families whose blocks the file names ("FLUX.1", ...); empty: none
  int64_t width = 0;                  // what its attention's A matrices read; 0 when none tells
  std::string tensor;                 // the first tensor of a family's block
  std::string width_tensor;           // the tensor that told the width
  bool is_lora = false;               // it holds LoRA pairs or differences at all
};

LoraFit lora_fit(const std::vector<TensorShape>& tensors);
// "FLUX.1, width 3072", "FLUX.1 or HunyuanVideo-1.5", "" when no family's blocks are named.
std::string describe(const LoraFit& fit);
// Empty when a LoRA of `fit` can change `model`'s transformer; else why not, naming `file` and the tensor.
std::string lora_mismatch(const LoraFit& fit, const ModelFolder& model, const std::string& file);

}  // namespace studio::plan

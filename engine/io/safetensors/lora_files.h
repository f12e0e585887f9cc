// LoRA files read by their headers alone (no tensor is loaded): which family each was made for, from its tensors'
// names and shapes (the families' own block names, Family::names_lora_module, and the width its attention's A
// matrices read), for the Models tab's listing and for a check before any work: the job's LoRAs that cannot
// change its model, as problems of the job, so that dit-launch and the studio refuse them in the same words.
// A first look that needs no model loaded; the loader's merge (io/weights/lora.h) still checks every module.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "plan/job.h"
#include "plan/model_folder.h"

namespace studio::io {

struct TensorShape {
  std::string name;
  std::vector<int64_t> shape;
};

// What a tensor of a LoRA file is, by its name's suffix ("x.lora_A.weight" -> {"x", Down}); Unknown for a tensor
// no LoRA holds (the loader refuses the file for it).
enum class LoraPiece { Down, Up, UpBias, Alpha, Diff, DiffBias, DoraScale, Unknown };
std::pair<std::string, LoraPiece> lora_piece(const std::string& tensor);

struct LoraFit {
  std::vector<std::string> families;  // the families whose blocks the file names ("FLUX.1", ...); empty: none
  int64_t width = 0;                  // what its attention's A matrices read; 0 when none tells
  std::string tensor;                 // the first tensor of a family's block
  std::string width_tensor;           // the tensor that told the width
  bool is_lora = false;               // it holds LoRA pairs or differences at all
  std::string not_lora;               // the first tensor that is no LoRA's (the loader refuses the file for it)
};

LoraFit lora_fit(const std::vector<TensorShape>& tensors);
// "FLUX.1, width 3072", "FLUX.1 or HunyuanVideo-1.5", "" when no family's blocks are named.
std::string describe(const LoraFit& fit);
// Empty when a LoRA of `fit` can change `model`'s transformer; else why not, naming `file` and the tensor.
std::string lora_mismatch(const LoraFit& fit, const plan::ModelFolder& model, const std::string& file);

// InputError when the file is not a readable safetensors file.
LoraFit lora_fit_of(const std::string& file);
// Adds a problem for each LoRA of the job (--lora, --lora_2) made for another family or size; files that cannot
// be read are plan::check_loras' to name.
void check_lora_fits(const plan::JobSpec& job, const plan::ModelFolder& model, std::vector<plan::Problem>& out);

}  // namespace studio::io

// LoRA files as changes to a transformer's weights, merged as each weight loads (io::WeightSet::add_deltas): for
// each linear layer W' = W + strength * (alpha / rank) * B @ A, what diffusers 0.35.2's load_lora_weights and
// set_adapters compute. The layouts artists' files come in, each module mapped to the engine's (diffusers') names:
// - diffusers / PEFT: "transformer.<module>.lora_A.weight" / ".lora_B.weight", alpha from the file's
//   "lora_adapter_metadata" (lora_alpha, alpha_pattern, use_rslora; without it alpha = rank);
// - kohya sd-scripts and musubi-tuner: "lora_unet_<original module, dots as underscores>.lora_down.weight" /
//   ".lora_up.weight" / ".alpha";
// - ComfyUI and the original layout: "diffusion_model.<original module>." with either pair of names;
// the original modules being the family's checkpoint layout (plan::FamilyRules::original_layout), a fused layer
// (FLUX's qkv, linear1) split by output rows as diffusers' converters split it. Each module's own alpha and rank
// give its scale (diffusers gives every module of a mixed-rank kohya file the first one's: docs/lora.md).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "io/weights/weights.h"
#include "plan/model_folder.h"

namespace studio::models {

// The changes `loras` make to the weights named `weight_names` (the transformer's, as the engine names them).
// InputError, naming the file and the tensor, for what the reference would refuse: a module the model does not
// have, A without B, ranks that disagree, values that are not finite, tensors that are not LoRA weights.
std::map<std::string, std::vector<io::LowRankDelta>> lora_deltas(const plan::ModelFolder& folder,
                                                                 const std::vector<plan::LoraUse>& loras,
                                                                 const std::vector<std::string>& weight_names);

}  // namespace studio::models

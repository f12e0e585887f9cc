// LoRA files as changes to a model's weights, merged as each weight loads (io::WeightSet::add_deltas): for
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
// Whole differences (".diff" for a weight, ".diff_b" for a bias, norms' included) add strength * difference.
// Text-encoder modules ("lora_te1_", "text_encoder.", "text_encoders.clip_l.transformer." for CLIP;
// "lora_te3_", "text_encoder_2.", "text_encoders.t5xxl.transformer." for T5) change the family's text encoders
// where it takes them (plan::Family::takes_text_encoder_loras), and are left out, and said so, elsewhere.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "io/weights/weights.h"
#include "plan/model_folder.h"

namespace studio::io {

// The part of a model whose weights a LoRA module changes.
enum class LoraTarget { Transformer, ClipText, T5Text };

// The changes `loras` make to the weights named `weight_names` (`target`'s, as the engine names them).
// InputError, naming the file and the tensor, for what the reference would refuse: a module the model does not
// have, A without B, ranks that disagree, values that are not finite, tensors that are not LoRA weights.
std::map<std::string, std::vector<WeightDelta>> lora_deltas(const plan::ModelFolder& folder,
                                                                const std::vector<plan::LoraUse>& loras,
                                                                const std::vector<std::string>& weight_names,
                                                                LoraTarget target = LoraTarget::Transformer);

// For the run's log: a line per file that has tensors the run leaves out as the reference does (DoRA's
// magnitudes, CLIP's position embedding and projection, text-encoder modules of a family that takes none),
// naming them and why. Reads the files' headers only.
std::vector<std::string> lora_left_out(const plan::ModelFolder& folder, const std::vector<plan::LoraUse>& loras);

// Whether the LoRA file `file` changes a text encoder the run applies it to (its strength then changes the prompt
// embeddings). Reads the file's header only.
bool lora_changes_text_encoders(const plan::ModelFolder& folder, const std::string& file);

}  // namespace studio::io

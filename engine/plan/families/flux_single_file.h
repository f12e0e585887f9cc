// FLUX.1's transformer as Black Forest Labs lay it out (flux1-dev.safetensors, and the GGUF and fp8 files made
// from it), named as diffusers names it: the inverse of diffusers' convert_flux_transformer_checkpoint_to_diffusers.
#pragma once
#include "plan/families/flux_config.h"
#include "plan/single_file.h"

namespace studio::plan {

// Every diffusers weight of a transformer of this config -> its rows in the BFL file. Fused layers are split
// by rows: qkv into q, k, v; a single block's linear1 into q, k, v and the MLP's input; and the output
// modulation's two halves swap (BFL orders it shift, scale; diffusers scale, shift).
TensorRenames flux_bfl_renames(const FluxTransformerConfig& cfg);

}  // namespace studio::plan

// Wan's transformer as the Wan team lay it out (the original checkpoints, and the GGUF and fp8 files ComfyUI
// users keep), named as diffusers names it: what diffusers' Wan conversion renames, one tensor for one tensor.
#pragma once
#include <set>
#include <string>

#include "plan/single_file.h"

namespace studio::plan {

// Each of `names` (a file in Wan's own layout) -> its diffusers name. Empty when the names are diffusers' already.
TensorRenames wan_original_renames(const std::set<std::string>& names);
// The weights and biases of every module above, for a transformer of `layers` blocks, renamed so.
TensorRenames wan_original_layout(int layers);

}  // namespace studio::plan

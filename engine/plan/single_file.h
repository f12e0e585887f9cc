// One file standing for a part of a model folder (--transformer FILE, as diffusers' from_single_file with the
// folder's config): the original checkpoint layouts the files come in, named as the engine names the part.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace studio::plan {

// Rows [first, first + rows) of a file's tensor (rows < 0: all of them).
struct RowSlice {
  std::string tensor;
  int64_t first = 0;
  int64_t rows = -1;
};
// A part's weight name (diffusers') -> where its rows are in the file, in order.
using TensorRenames = std::map<std::string, std::vector<RowSlice>>;

// A tensor's name without the prefix a whole ComfyUI checkpoint puts before the transformer's
// ("model.diffusion_model.", "diffusion_model.").
std::string without_checkpoint_prefix(const std::string& name);
// Whether a tensor's or file's name ends with `tail` (C++17 has no std::string::ends_with, and 1.13 builds in it).
bool ends_with(const std::string& name, const std::string& tail);
bool starts_with(const std::string& name, const std::string& head);

// A file's tensor that is not a weight but describes one: ComfyUI's scaled fp8 keeps `<layer>.scale_weight`
// (the weight's per-tensor scale), `<layer>.scale_input` and a `scaled_fp8` marker. The weight it belongs to,
// or "" for the marker and input scales, which the engine does not need.
struct ScaleTensor {
  bool is_scale = false;
  std::string weight;  // "<layer>.weight" for a scale_weight
};
ScaleTensor scale_tensor(const std::string& name);

// A T5 / umT5 encoder file's names as transformers names them: llama.cpp's GGUF names (city96's encoder files:
// "enc.blk.3.ffn_gate.weight" -> "encoder.block.3.layer.1.DenseReluDense.wi_0.weight", "token_embd.weight" ->
// "shared.weight") and a whole ComfyUI checkpoint's "text_encoders.<name>.transformer." prefix; names already in
// transformers' layout are left as they are.
TensorRenames t5_file_renames(const std::set<std::string>& names);

}  // namespace studio::plan

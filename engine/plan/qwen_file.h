// A Qwen2 / Qwen2.5-VL language model in one file (--text_encoder FILE for HunyuanVideo-1.5): llama.cpp's GGUF
// names, as its converter writes the "qwen2" and "qwen2vl" architectures, named as transformers names them.
#pragma once
#include <set>

#include "plan/single_file.h"

namespace studio::plan {

struct ModelFolder;

// Whether the model's text_encoder/ is a Qwen language model (HunyuanVideo-1.5's), so a file given for it is read
// with the names below.
bool reads_qwen(const ModelFolder& model);

// The GGUF architectures a Qwen text encoder file may say (general.architecture).
inline const std::vector<std::string> kQwenGgufArchitectures = {"qwen2vl", "qwen2"};

// "blk.3.attn_q.bias" -> "layers.3.self_attn.q_proj.bias", "token_embd.weight" -> "embed_tokens.weight",
// "output_norm.weight" -> "norm.weight", "output.weight" -> "lm_head.weight" (the head, which the encoder does not
// read); names already in transformers' layout are left as they are.
TensorRenames qwen_file_renames(const std::set<std::string>& names);

}  // namespace studio::plan

// The files a run reads as they are now, for what a worker serving several runs keeps (kept_transformers.h,
// kept_embeddings.h): a file rewritten under the same name (a LoRA retrained, a folder downloaded again) is
// another file.
#pragma once
#include <string>

#include "plan/model_folder.h"

namespace studio::pipeline {

// The path, size and last write time of `path` ("" for size and time where it cannot be read).
std::string file_identity(const std::string& path);
// The files `part` (transformer, text_encoder_2, tokenizer, ...) loads from: the job's single file for it
// (ModelFolder::weight_files), else every file of its folder, one line each; "" where the folder has no such part.
std::string part_identity(const plan::ModelFolder& folder, const std::string& part);

}  // namespace studio::pipeline

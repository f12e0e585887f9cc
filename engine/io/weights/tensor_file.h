// Tensors a job reads from and writes to safetensors files (--prompt_embeds, --latents,
// --sampler_noise, --save_tensors). A file may hold more tensors than the one asked for.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "io/safetensors/safetensors_file.h"

namespace studio::io {

class TensorFile {
 public:
  // `flag` is the option that named the file, used in messages ("--latents").
  TensorFile(const std::string& path, std::string flag);
  // The named tensor as float32 on the CPU; InputError naming flag, file and tensor if it is missing
  // or its rank is not `rank` (any rank when negative).
  at::Tensor get(const std::string& name, int64_t rank, const std::string& layout) const;
  at::Tensor get_int64(const std::string& name) const;
  bool has(const std::string& name) const { return file_->find(name) != nullptr; }

 private:
  const TensorInfo& find(const std::string& name, const std::string& layout) const;
  std::shared_ptr<const SafetensorsFile> file_;
  std::string flag_;
};

// Writes the tensors (float32 unless integer) through a temporary file renamed into place.
void save_tensors(const std::string& path, const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                  const std::map<std::string, std::string>& metadata = {});

}  // namespace studio::io

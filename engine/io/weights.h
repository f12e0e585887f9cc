// The weights of one part of a diffusers folder (transformer/, vae/, text_encoder/): one safetensors
// file, or shards named by a *.safetensors.index.json. A model takes each weight it needs by name
// and shape; what is missing, misshapen or left over is an error that names file and tensor.
#pragma once
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "io/safetensors_file.h"

namespace studio::io {

// Converts one stored tensor (F32, F16, BF16, F64, integers) to `dtype` on `device`. On the CPU and in
// the stored dtype the tensor shares the file's mapping (no copy).
at::Tensor to_tensor(const std::shared_ptr<const SafetensorsFile>& file, const TensorInfo& info,
                     at::ScalarType dtype, at::Device device);

class WeightSet {
 public:
  // `stem` is "diffusion_pytorch_model" (diffusers parts) or "model" (transformers parts).
  static WeightSet open(const std::string& part_dir, const std::string& stem);

  bool contains(const std::string& name) const { return where_.count(name) != 0; }
  // The weight, checked against the shape the config implies (`config_note` says from which fields).
  at::Tensor take(const std::string& name, const std::vector<int64_t>& shape, at::ScalarType dtype, at::Device device,
                  const std::string& config_note = "");
  // Throws for weights nobody took, unless listed in `ignorable`.
  void expect_all_taken(const std::set<std::string>& ignorable = {}) const;
  const std::string& dir() const { return dir_; }
  std::vector<std::string> names() const;

 private:
  struct Entry {
    std::shared_ptr<const SafetensorsFile> file;
    const TensorInfo* info;
  };
  std::string dir_;
  std::map<std::string, Entry> where_;
  std::set<std::string> taken_;
};

}  // namespace studio::io

// The weights of one part of a diffusers folder (transformer/, vae/, text_encoder/): one safetensors
// file, or shards named by a *.safetensors.index.json. A model takes each weight it needs by name
// and shape; what is missing, misshapen or left over is an error that names file and tensor.
#pragma once
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include "io/safetensors/safetensors_file.h"

namespace studio::io {

// Converts one stored tensor (F32, F16, BF16, F64, integers) to `dtype` on `device`. On the CPU and in
// the stored dtype the tensor shares the file's mapping (no copy).
at::Tensor to_tensor(const std::shared_ptr<const SafetensorsFile>& file, const TensorInfo& info,
                     at::ScalarType dtype, at::Device device);

class WeightSet {
 public:
  // `stem` is "diffusion_pytorch_model" (diffusers parts) or "model" (transformers parts).
  static WeightSet open(const std::string& part_dir, const std::string& stem);
  // A set that makes weights instead of reading them: each take() draws a deterministic tensor of the
  // shape asked for (biases 0, 1-D weights 1, others N(0, 1/fan_in)). The built-in demo model is made
  // this way, so the weight layout has one home: the loaders.
  static WeightSet synthetic(uint64_t seed);
  // Writes every weight a synthetic set has made, as float32.
  void save(const std::string& file) const;

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
  std::shared_ptr<at::Generator> synthetic_;  // set for a synthetic set
  std::vector<std::pair<std::string, at::Tensor>> made_;
};

}  // namespace studio::io

#include "io/weights/weights.h"

#include <cmath>
#include <filesystem>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/zeros.h>
#include <nlohmann/json.hpp>

#include "plan/error.h"
#include "plan/model_folder.h"

namespace fs = std::filesystem;

namespace studio::io {

namespace {

at::ScalarType scalar_type(DType d) {
  switch (d) {
    case DType::F64: return at::kDouble;
    case DType::F32: return at::kFloat;
    case DType::F16: return at::kHalf;
    case DType::BF16: return at::kBFloat16;
    case DType::I64: return at::kLong;
    case DType::I32: return at::kInt;
    case DType::I16: return at::kShort;
    case DType::I8: return at::kChar;
    case DType::U8: return at::kByte;
    case DType::BOOL: return at::kBool;
  }
  return at::kFloat;
}

}  // namespace

at::Tensor to_tensor(const std::shared_ptr<const SafetensorsFile>& file, const TensorInfo& info, at::ScalarType dtype,
                     at::Device device) {
  const at::ScalarType stored = scalar_type(info.dtype);
  const void* ptr = file->data(info);
  const bool aligned = reinterpret_cast<uintptr_t>(ptr) % dtype_size(info.dtype) == 0;
  // The deleter keeps the mapping alive for as long as the tensor views it.
  auto keep = file;
  at::Tensor view = at::from_blob(
      const_cast<void*>(ptr), info.shape, [keep](void*) mutable { keep.reset(); },
      at::TensorOptions().dtype(stored).device(at::kCPU));
  if (!aligned) view = view.clone();
  if (stored == dtype && device.is_cpu()) return view;
  return view.to(device, dtype);
}

WeightSet WeightSet::open(const std::string& part_dir, const std::string& stem) {
  WeightSet w;
  w.dir_ = part_dir;
  const fs::path dir(part_dir);
  const fs::path single = dir / (stem + ".safetensors");
  const fs::path index = dir / (stem + ".safetensors.index.json");
  if (fs::exists(single)) {
    auto f = SafetensorsFile::open(single.string());
    for (const auto& t : f->tensors()) w.where_[t.name] = {f, &t};
    return w;
  }
  if (!fs::exists(index)) {
    std::string hint = fs::exists(dir / (stem + ".bin")) ? " (a .bin pickle checkpoint is never read: convert it to "
                                                           "safetensors)"
                                                         : "";
    throw InputError(part_dir + ": no " + single.filename().string() + " or " + index.filename().string() + hint);
  }
  const std::string text = plan::read_text_file(index.string());
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw InputError(index.string() + ": not valid JSON (" + e.what() + ")");
  }
  if (!j.contains("weight_map") || !j["weight_map"].is_object())
    throw InputError(index.string() + ": no 'weight_map' object naming each tensor's file");
  std::map<std::string, std::shared_ptr<const SafetensorsFile>> shards;
  for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
    if (!it->is_string()) throw InputError(index.string() + ": weight_map entry '" + it.key() + "' is not a file name");
    const std::string shard = it->get<std::string>();
    // Shards live in this folder: a name with a path in it is refused rather than followed.
    if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..")
      throw InputError(index.string() + ": weight_map names '" + shard + "' for '" + it.key() +
                       "'; shard names must be plain file names in the same folder");
    auto& f = shards[shard];
    if (!f) f = SafetensorsFile::open((dir / shard).string());
    const TensorInfo* info = f->find(it.key());
    if (!info)
      throw InputError(index.string() + ": weight_map puts '" + it.key() + "' in " + shard + ", which has no such tensor");
    w.where_[it.key()] = {f, info};
  }
  return w;
}

WeightSet WeightSet::synthetic(uint64_t seed) {
  WeightSet w;
  w.dir_ = "(synthetic weights)";
  w.synthetic_ = std::make_shared<at::Generator>(at::make_generator<at::CPUGeneratorImpl>(seed));
  return w;
}

void WeightSet::save(const std::string& file) const {
  std::vector<std::pair<std::string, at::Tensor>> out(made_.begin(), made_.end());
  std::vector<TensorToWrite> rows;
  for (const auto& [name, t] : out) rows.push_back({name, DType::F32, t.sizes().vec(), t.data_ptr()});
  write_safetensors(file, rows);
}

at::Tensor WeightSet::take(const std::string& name, const std::vector<int64_t>& shape, at::ScalarType dtype,
                           at::Device device, const std::string& config_note) {
  if (synthetic_) {
    at::Tensor t;
    const bool bias = name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
    if (bias) {
      t = at::zeros(shape, at::kFloat);
    } else if (shape.size() == 1) {
      t = at::ones(shape, at::kFloat);
    } else {
      int64_t fan_in = 1;
      for (size_t i = 1; i < shape.size(); ++i) fan_in *= shape[i];
      t = at::randn(shape, *synthetic_, at::TensorOptions().dtype(at::kFloat)) / std::sqrt(double(fan_in));
    }
    made_.emplace_back(name, t);
    taken_.insert(name);
    return t.to(device, dtype);
  }
  auto it = where_.find(name);
  if (it == where_.end())
    throw InputError(dir_ + ": missing weight '" + name + "' (shape " + shape_str(shape) +
                     "); the checkpoint does not match its config.json");
  const TensorInfo& info = *it->second.info;
  if (info.shape != shape)
    throw InputError(it->second.file->path() + ": weight '" + name + "' has shape " + shape_str(info.shape) +
                     " but the config needs " + shape_str(shape) + (config_note.empty() ? "" : " (" + config_note + ")"));
  switch (info.dtype) {
    case DType::F32: case DType::F16: case DType::BF16: case DType::F64: break;
    default:
      throw InputError(it->second.file->path() + ": weight '" + name + "' is " + dtype_name(info.dtype) +
                       "; model weights must be F32, F16, BF16 or F64");
  }
  taken_.insert(name);
  return to_tensor(it->second.file, info, dtype, device);
}

std::vector<std::string> WeightSet::names() const {
  std::vector<std::string> out;
  for (const auto& e : where_) out.push_back(e.first);
  return out;
}

void WeightSet::expect_all_taken(const std::set<std::string>& ignorable) const {
  for (const auto& [name, entry] : where_)
    if (!taken_.count(name) && !ignorable.count(name))
      throw InputError(entry.file->path() + ": unexpected weight '" + name +
                       "' that the config does not use; does config.json belong to these weights?");
}

}  // namespace studio::io

// WeightSet::open_file: one GGUF or safetensors file standing for a part of a folder.
#include <algorithm>
#include <cstring>
#include <fstream>

#include "io/gguf/gguf_file.h"
#include "io/weights/weights.h"
#include "plan/error.h"

namespace studio::io {

namespace {

// The file's tensors by name (a ComfyUI checkpoint's prefix removed), ComfyUI's scale tensors folded into the
// weights they scale.
std::map<std::string, StoredTensor> read_tensors(const std::string& path, const std::vector<std::string>& architectures) {
  char magic[4] = {};
  std::ifstream(path, std::ios::binary).read(magic, 4);
  std::map<std::string, StoredTensor> out;
  if (std::memcmp(magic, "GGUF", 4) == 0) {
    auto f = GgufFile::open(path);
    const auto arch = f->string_value("general.architecture");
    if (arch && std::find(architectures.begin(), architectures.end(), *arch) == architectures.end()) {
      std::string want;
      for (const auto& a : architectures) want += (want.empty() ? "'" : " or '") + a + "'";
      throw InputError(path + ": a GGUF file of architecture '" + *arch + "' (general.architecture); this part of " +
                       "the model folder is read from GGUF files that say " + want +
                       ". Use such a GGUF, or the folder the file belongs to");
    }
    for (const auto& t : f->tensors())
      out[plan::without_checkpoint_prefix(t.name)] = {f, path, t.name, f->data(t), t.format,
                                                      plan::format_info(t.format).name, t.shape};
    return out;
  }
  auto f = SafetensorsFile::open(path);
  std::map<std::string, float> scales;
  for (const auto& t : f->tensors()) {
    const std::string name = plan::without_checkpoint_prefix(t.name);
    if (const auto s = plan::scale_tensor(name); s.is_scale) {
      if (s.weight.empty()) continue;
      if (t.dtype != DType::F32 || t.numel() != 1)
        throw InputError(path + ": '" + t.name + "' is " + dtype_name(t.dtype) + " " + shape_str(t.shape) +
                         "; a scale_weight is one F32 value (ComfyUI's scaled fp8)");
      float v;
      std::memcpy(&v, f->data(t), sizeof v);
      scales[s.weight] = v;
      continue;
    }
    out[name] = {f, path, t.name, f->data(t), weight_format(t.dtype), dtype_name(t.dtype), t.shape};
  }
  for (const auto& [weight, value] : scales) {
    auto it = out.find(weight);
    if (it == out.end()) throw InputError(path + ": a scale_weight for '" + weight + "', which the file does not hold");
    it->second.scale = value;
  }
  return out;
}

}  // namespace

WeightSet WeightSet::open_part_file(const std::string& part, const std::string& path,
                                   const std::vector<std::string>& gguf_architectures,
                                   const std::function<plan::TensorRenames(const std::set<std::string>&)>& renames) {
  try {
    WeightSet w = open_file(path, gguf_architectures, renames);
    w.part_ = part;
    return w;
  } catch (const InputError& e) {  // its own words start with the file's path
    throw InputError("--" + part + " " + e.what());
  }
}

WeightSet WeightSet::open_file(const std::string& path, const std::vector<std::string>& gguf_architectures,
                               const std::function<plan::TensorRenames(const std::set<std::string>&)>& renames) {
  auto tensors = read_tensors(path, gguf_architectures);
  std::set<std::string> names;
  for (const auto& [name, t] : tensors) names.insert(name);
  const plan::TensorRenames map = renames(names);
  WeightSet w;
  w.dir_ = path;
  if (map.empty()) {
    for (auto& [name, t] : tensors) w.where_[name] = whole(t);
    return w;
  }
  std::set<std::string> used;
  for (const auto& [ours, slices] : map) {
    Entry e;
    for (const auto& s : slices) {
      auto it = tensors.find(s.tensor);
      StoredTensor t = it != tensors.end() ? it->second : StoredTensor{nullptr, path, s.tensor};
      const int64_t rows = s.rows >= 0 ? s.rows : (t.shape.empty() ? 1 : t.shape[0]);
      e.push_back({std::move(t), s.first, rows});
      used.insert(s.tensor);
    }
    w.where_[ours] = std::move(e);
  }
  for (auto& [name, t] : tensors)  // left for expect_all_taken to name
    if (!used.count(name)) w.where_[name] = whole(t);
  return w;
}

}  // namespace studio::io

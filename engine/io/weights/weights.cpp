#include "io/weights/weights.h"

#include <cmath>
#include <filesystem>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
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
    case DType::U8: case DType::F8_E4M3: case DType::F8_E5M2: return at::kByte;
    case DType::BOOL: return at::kBool;
  }
  return at::kFloat;
}

}  // namespace

std::optional<plan::WeightFormat> weight_format(DType d) {
  switch (d) {
    case DType::F32: return plan::WeightFormat::F32;
    case DType::F16: return plan::WeightFormat::F16;
    case DType::BF16: return plan::WeightFormat::BF16;
    case DType::F8_E4M3: return plan::WeightFormat::F8_E4M3;
    case DType::F8_E5M2: return plan::WeightFormat::F8_E5M2;
    default: return std::nullopt;
  }
}

namespace {

// The formats torch holds as they are: a weight in one of them is a view of the file.
std::optional<at::ScalarType> native_type(plan::WeightFormat f) {
  switch (f) {
    case plan::WeightFormat::F32: return at::kFloat;
    case plan::WeightFormat::F16: return at::kHalf;
    case plan::WeightFormat::BF16: return at::kBFloat16;
    default: return std::nullopt;
  }
}

// A view of `size` bytes of a file's mapping as a tensor, the mapping kept alive for as long as it is viewed
// (copied when the bytes are not aligned for the type).
at::Tensor file_view(const std::shared_ptr<const void>& owner, const uint8_t* data, const std::vector<int64_t>& shape,
                     at::ScalarType type) {
  auto keep = owner;
  at::Tensor view = at::from_blob(
      const_cast<uint8_t*>(data), shape, [keep](void*) mutable { keep.reset(); },
      at::TensorOptions().dtype(type).device(at::kCPU));
  const bool aligned = reinterpret_cast<uintptr_t>(data) % at::elementSize(type) == 0;
  return aligned ? view : view.clone();
}

int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

// diffusers saves a table it computed in float64 (CogVideoX-5B-I2V's learned positions) as it is.
bool is_float64(const StoredTensor& t) { return !t.format && t.type_name == "F64"; }

// The whole stored tensor as float values in `dtype` on `device`.
at::Tensor dense(const StoredTensor& t, at::ScalarType dtype, at::Device device) {
  if (is_float64(t)) return file_view(t.owner, t.data, t.shape, at::kDouble).to(device, dtype);
  if (const auto native = native_type(*t.format); native && t.scale == 1.0f)
    return file_view(t.owner, t.data, t.shape, *native).to(device, dtype);
  return t.packed().dequantize(at::kFloat).to(device, dtype);
}

}  // namespace

at::Tensor to_tensor(const std::shared_ptr<const SafetensorsFile>& file, const TensorInfo& info, at::ScalarType dtype,
                     at::Device device) {
  if (info.dtype == DType::F8_E4M3 || info.dtype == DType::F8_E5M2) {
    StoredTensor t{file, file->path(), info.name, file->data(info), weight_format(info.dtype), "", info.shape};
    return dense(t, dtype, device);
  }
  const at::ScalarType stored = scalar_type(info.dtype);
  at::Tensor view = file_view(file, file->data(info), info.shape, stored);
  if (stored == dtype && device.is_cpu()) return view;
  return view.to(device, dtype);
}

PackedWeight StoredTensor::packed() const {
  const int64_t rows = shape.size() >= 2 ? shape[0] : 1;
  const auto bytes = int64_t(plan::format_bytes(*format, uint64_t(numel_of(shape))));
  return {*format, shape, file_view(owner, data, {rows, rows ? bytes / rows : 0}, at::kByte), scale};
}

WeightSet::Entry WeightSet::whole(StoredTensor t) {
  const int64_t rows = t.shape.empty() ? 1 : t.shape[0];
  return {{std::move(t), 0, rows}};
}

WeightSet WeightSet::open(const std::string& part_dir, const std::string& stem) {
  WeightSet w;
  w.dir_ = part_dir;
  const fs::path dir(part_dir);
  const fs::path single = dir / (stem + ".safetensors");
  const fs::path index = dir / (stem + ".safetensors.index.json");
  auto add = [&w](const std::shared_ptr<const SafetensorsFile>& f, const TensorInfo& t) {
    w.where_[t.name] =
        whole({f, f->path(), t.name, f->data(t), weight_format(t.dtype), dtype_name(t.dtype), t.shape});
  };
  if (fs::exists(single)) {
    auto f = SafetensorsFile::open(single.string());
    for (const auto& t : f->tensors()) add(f, t);
    return w;
  }
  if (!fs::exists(index)) {
    // A part downloaded without its weights (dit-models download --without PART) is given them as one file by the
    // flag of its name.
    const std::string part = dir.filename().string();
    const bool flag =
        part == "transformer" || part == "transformer_2" || part == "text_encoder" || part == "text_encoder_2";
    std::string hint = fs::exists(dir / (stem + ".bin"))
                           ? " (a .bin pickle checkpoint is never read: convert it to safetensors)"
                       : flag ? "; give them as one file with --" + part + " FILE (a GGUF, fp8 or safetensors file)"
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
    add(f, *info);
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
  std::vector<TensorToWrite> rows;
  for (const auto& [name, t] : made_) rows.push_back({name, DType::F32, t.sizes().vec(), t.data_ptr()});
  write_safetensors(file, rows);
}

at::Tensor WeightSet::synthetic_take(const std::string& name, const std::vector<int64_t>& shape) {
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
  return t;
}

const WeightSet::Entry& WeightSet::find(const std::string& name, const std::vector<int64_t>& shape,
                                        const std::string& config_note) {
  const std::string note = config_note.empty() ? "" : " (" + config_note + ")";
  auto it = where_.find(name);
  if (it == where_.end() && !part_.empty())
    throw InputError("--" + part_ + " " + dir_ + ": has no weight for '" + name + "' (shape " + shape_str(shape) +
                     "), which the folder's " + part_ + "/config.json asks for: the file holds another model's " +
                     part_ + ", another part's weights, or another size of this model; give the file made for this "
                     "folder's " + part_ + "/");
  if (it == where_.end())
    throw InputError(dir_ + ": missing weight '" + name + "' (shape " + shape_str(shape) +
                     "); the checkpoint does not match its config.json");
  const Entry& e = it->second;
  for (const auto& s : e) {
    const StoredTensor& t = s.tensor;
    if (!t.data) throw InputError(t.file + ": missing tensor '" + t.name + "' (for '" + name + "', shape " +
                                  shape_str(shape) + "); is this file this model's" + note + "?");
    if (!t.format && !is_float64(t))
      throw InputError(t.file + ": weight '" + t.name + "' is " + t.type_name + "; weights are read in " +
                       plan::weight_format_names() + " (and F64 where a table is stored so)");
  }
  // The rows put together: their count, the rest of the shape from the first slice.
  std::vector<int64_t> found = e.front().tensor.shape;
  if (e.size() > 1 || e.front().first != 0 || (!found.empty() && e.front().rows != found[0])) {
    int64_t rows = 0;
    for (const auto& s : e) {
      const auto& ts = s.tensor.shape;
      const bool fits = !ts.empty() && s.first + s.rows <= ts[0] &&
                        std::vector<int64_t>(ts.begin() + 1, ts.end()) == std::vector<int64_t>(found.begin() + 1, found.end());
      if (!fits)
        throw InputError(s.tensor.file + ": tensor '" + s.tensor.name + "' has shape " + shape_str(ts) + "; weight '" +
                         name + "' needs its rows [" + std::to_string(s.first) + ", " + std::to_string(s.first + s.rows) +
                         ") and the config needs " + shape_str(shape) + note);
      rows += s.rows;
    }
    found[0] = rows;
  }
  if (found != shape) {
    const auto& t = e.front().tensor;
    throw InputError(t.file + ": weight '" + (t.name == name ? name : t.name + "' (for '" + name) + "' has shape " +
                     shape_str(found) + " but the config needs " + shape_str(shape) + note);
  }
  taken_.insert(name);
  return e;
}

at::Tensor WeightSet::take(const std::string& name, const std::vector<int64_t>& shape, at::ScalarType dtype,
                           at::Device device, const std::string& config_note) {
  if (device.is_meta()) {  // a dry load: the name and shape checked, nothing read
    if (!synthetic_) find(name, shape, config_note);
    return at::empty(shape, at::TensorOptions().dtype(dtype).device(device));
  }
  if (synthetic_) return synthetic_take(name, shape).to(device, dtype);
  const auto deltas = deltas_.find(name);
  if (deltas == deltas_.end()) return read(name, shape, dtype, device, config_note);
  // In float32 on the CPU, then once into the run's dtype: W + sum of scale * up @ down, as the reference merges.
  // A float32 file's weight reads as a view of the file, to be copied before it changes; any other is read
  // into a tensor of its own already (a copy more would cost a pass and fresh pages per weight).
  auto w = read(name, shape, at::kFloat, at::kCPU, config_note);
  const StoredTensor& first = find(name, shape, config_note).front().tensor;
  if (first.format && native_type(*first.format) == at::kFloat && first.scale == 1.0f) w = w.clone();
  for (const auto& d : deltas->second) {
    d.down.defined() ? w.addmm_(d.up, d.down, 1.0, d.factor()) : w.add_(d.up, d.factor());
    if (d.strength) d.strength->merged = true;
  }
  return w.to(device, dtype);
}

std::vector<int64_t> WeightSet::stored_shape(const Entry& e) {
  std::vector<int64_t> shape = e.front().tensor.shape;
  if (shape.empty()) return shape;
  shape[0] = 0;
  for (const auto& s : e) shape[0] += s.rows;
  return shape;
}

double WeightDelta::factor() const { return plan::times_strength(scale, strength.get()); }

void WeightSet::add_deltas(std::map<std::string, std::vector<WeightDelta>> deltas) {
  deltas_ = std::move(deltas);
  for (const auto& [name, changes] : deltas_)
    if (const auto it = where_.find(name); it != where_.end()) check_deltas(name, stored_shape(it->second));
}

void WeightSet::check_deltas(const std::string& name, const std::vector<int64_t>& shape) const {
  const auto deltas = deltas_.find(name);
  if (deltas == deltas_.end()) return;
  for (const auto& d : deltas->second) {
    if (!d.down.defined() && d.up.sizes().vec() != shape)
      throw InputError(d.source + ": changes " + name + " " + shape_str(shape) + " by a difference of " +
                       shape_str(d.up.sizes().vec()) + "; this LoRA was made for another model's sizes");
    if (d.down.defined() && (shape.size() != 2 || d.up.size(0) != shape[0] || d.down.size(1) != shape[1]))
      throw InputError(d.source + ": changes " + name + " " + shape_str(shape) + " by [" +
                       std::to_string(d.up.size(0)) + ", " + std::to_string(d.down.size(1)) +
                       "] (lora_up rows x lora_down columns); this LoRA was made for another model's sizes");
  }
}

at::Tensor WeightSet::read(const std::string& name, const std::vector<int64_t>& shape, at::ScalarType dtype,
                           at::Device device, const std::string& config_note) {
  const Entry& e = find(name, shape, config_note);
  const auto& stored = e.front().tensor.shape;
  if (e.size() == 1 && e.front().first == 0 && (stored.empty() || e.front().rows == stored[0]))
    return dense(e.front().tensor, dtype, device);
  std::vector<at::Tensor> parts;
  for (const auto& s : e) parts.push_back(dense(s.tensor, dtype, device).narrow(0, s.first, s.rows));
  return parts.size() == 1 ? parts[0] : at::cat(parts, 0);
}

LinearWeight WeightSet::take_linear(const std::string& name, const std::vector<int64_t>& shape, at::ScalarType dtype,
                                    at::Device device, const std::string& config_note) {
  auto w = linear_as_kept(name, shape, dtype, device, config_note);
  if (w.packed.defined()) w.packed.scratch = scratch_;  // the model's layers share one dense weight's memory
  return w;
}

LinearWeight WeightSet::linear_as_kept(const std::string& name, const std::vector<int64_t>& shape,
                                       at::ScalarType dtype, at::Device device, const std::string& config_note) {
  if (device.is_meta()) return {take(name, shape, dtype, device, config_note), {}};
  if (synthetic_) {
    const auto w = synthetic_take(name, shape);
    if (store_linear_as_) return {{}, quantize_fp8(w, device)};
    return {w.to(device, dtype), {}};
  }
  const Entry& e = find(name, shape, config_note);
  bool packed = shape.size() == 2;
  for (const auto& s : e) {
    packed = packed && s.tensor.format && !native_type(*s.tensor.format) && s.tensor.scale == e.front().tensor.scale &&
             s.tensor.format == e.front().tensor.format;
  }
  if (packed) {
    std::vector<PackedWeight> parts;
    for (const auto& s : e) parts.push_back(s.tensor.packed().rows(s.first, s.rows));
    const auto beside = deltas_.find(name);
    return {{}, (parts.size() == 1 ? parts[0] : cat_rows(parts)).to(device),
            beside == deltas_.end() ? std::vector<WeightDelta>{} : beside->second};
  }
  // Kept beside (plan::ModelFolder::loras_beside), the changes stay out of the weight, quantized or not.
  const auto changes = deltas_.find(name);
  const bool beside = deltas_beside_ && changes != deltas_.end() && shape.size() == 2;
  if (store_linear_as_ && shape.size() == 2) {
    const auto w =
        beside ? read(name, shape, at::kFloat, at::kCPU, config_note) : take(name, shape, at::kFloat, at::kCPU);
    return {{}, quantize_fp8(w, device), beside ? changes->second : std::vector<WeightDelta>{}};
  }
  if (beside) return {read(name, shape, dtype, device, config_note), {}, changes->second};
  return {take(name, shape, dtype, device, config_note), {}};
}

std::vector<std::string> WeightSet::names() const {
  std::vector<std::string> out;
  for (const auto& e : where_) out.push_back(e.first);
  return out;
}

void WeightSet::expect_all_taken(const std::set<std::string>& ignorable) const {
  for (const auto& [name, entry] : where_)
    if (!taken_.count(name) && !ignorable.count(name))
      throw InputError(entry.front().tensor.file + ": unexpected weight '" + entry.front().tensor.name +
                       "' that the config does not use; does config.json belong to these weights?");
}

}  // namespace studio::io

#include "io/weights/tensor_file.h"

#include "io/weights/weights.h"
#include "plan/error.h"

namespace studio::io {

TensorFile::TensorFile(const std::string& path, std::string flag) : flag_(std::move(flag)) {
  try {
    file_ = SafetensorsFile::open(path);
  } catch (const InputError& e) {
    throw InputError(flag_ + " " + e.what());
  }
}

const TensorInfo& TensorFile::find(const std::string& name, const std::string& layout) const {
  const TensorInfo* info = file_->find(name);
  if (!info) {
    std::string held;
    for (const auto& t : file_->tensors()) held += (held.empty() ? "" : ", ") + t.name;
    throw InputError(flag_ + " " + file_->path() + ": no tensor '" + name + "' " + layout + " (the file holds: " +
                     (held.empty() ? "nothing" : held) + ")");
  }
  return *info;
}

at::Tensor TensorFile::get(const std::string& name, int64_t rank, const std::string& layout) const {
  const TensorInfo& info = find(name, layout);
  if (rank >= 0 && int64_t(info.shape.size()) != rank)
    throw InputError(flag_ + " " + file_->path() + ": tensor '" + name + "' has shape " + shape_str(info.shape) +
                     ", expected " + layout);
  if (info.dtype != DType::F32 && info.dtype != DType::F16 && info.dtype != DType::BF16 && info.dtype != DType::F64)
    throw InputError(flag_ + " " + file_->path() + ": tensor '" + name + "' is " + dtype_name(info.dtype) +
                     ", expected a floating-point type");
  return to_tensor(file_, info, at::kFloat, at::kCPU);
}

at::Tensor TensorFile::get_int64(const std::string& name) const {
  const TensorInfo& info = find(name, "(integers)");
  return to_tensor(file_, info, at::kLong, at::kCPU);
}

void save_tensors(const std::string& path, const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                  const std::map<std::string, std::string>& metadata) {
  std::vector<at::Tensor> keep;  // contiguous CPU copies, alive until written
  std::vector<TensorToWrite> out;
  for (const auto& [name, t] : tensors) {
    const bool integer = !at::isFloatingType(t.scalar_type());
    keep.push_back(t.detach().to(at::kCPU, integer ? at::kLong : at::kFloat).contiguous());
    out.push_back({name, integer ? DType::I64 : DType::F32, keep.back().sizes().vec(), keep.back().data_ptr()});
  }
  write_safetensors(path, out, metadata);
}

}  // namespace studio::io

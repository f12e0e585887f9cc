// The safetensors format without LibTorch: a memory-mapped reader that checks the header against the
// file before anything trusts it, as the format's reference reader does (a bounded JSON object starting
// with '{', known dtypes, non-negative dimensions, element and byte counts that cannot overflow, no name
// twice, the tensors' data in bounds and covering the data section exactly: no shared bytes, no holes,
// nothing after the last), and a writer that never leaves a half-written file behind.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace studio::io {

enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL, F8_E4M3, F8_E5M2 };
size_t dtype_size(DType d);
const char* dtype_name(DType d);  // as in the file: "F32", ...

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets into the data section
  uint64_t end = 0;
  int64_t numel() const;  // the product of the shape (the reader has checked that it cannot overflow)
};

std::string shape_str(const std::vector<int64_t>& shape);  // "[1, 2, 3]"

class SafetensorsFile {
 public:
  // Maps the file and validates its header; throws InputError naming the file (and tensor) otherwise.
  static std::shared_ptr<const SafetensorsFile> open(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find(const std::string& name) const;
  const uint8_t* data(const TensorInfo& t) const { return data_ + t.begin; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  SafetensorsFile() = default;
  std::string path_;
  void* map_ = nullptr;
  size_t map_size_ = 0;
  const uint8_t* data_ = nullptr;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

struct TensorToWrite {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const void* data;  // numel * dtype_size bytes, little-endian, contiguous
};

// Writes `path` through a temporary file in the same folder, renamed into place only when complete.
// Throws InputError (with the OS's reason) when the folder is not writable or the disk is full.
void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace studio::io

// The GGUF format (versions 2 and 3, little-endian) without LibTorch: a memory-mapped reader that checks
// the whole header against the file before anything trusts it (every read in bounds, counts that the
// bytes left could hold, known value and ggml types, no key or tensor name twice, 1 to 4 dimensions of
// at least one element, element and byte counts that cannot overflow, whole blocks per row, aligned
// offsets, the tensors' data in bounds and not shared), and a writer for tests that never leaves a
// half-written file behind. Tensor sizes come from plan/weight_format.h's table.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "plan/weight_format.h"

namespace studio::io {

struct GgufTensor {
  std::string name;
  plan::WeightFormat format = plan::WeightFormat::F32;
  // Outermost first, as torch orders it: GGUF's dims reversed ([out, in] for a weight stored with
  // ne = [in, out]), or city96's `comfy.gguf.orig_shape.<name>` where the file has one.
  std::vector<int64_t> shape;
  uint64_t offset = 0;  // into the data section
  uint64_t bytes = 0;   // plan::format_bytes(format, numel)
  int64_t numel() const;  // the product of the shape (the reader has checked that it cannot overflow)
};

class GgufFile {
 public:
  // Maps the file and validates it; throws InputError naming the file (and key or tensor) otherwise.
  static std::shared_ptr<const GgufFile> open(const std::string& path);
  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }  // general.alignment, 32 where the file has none
  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* find(const std::string& name) const;
  const uint8_t* data(const GgufTensor& t) const { return data_ + t.offset; }

  std::vector<std::string> keys() const;  // every KV's key, sorted
  std::optional<std::string> string_value(const std::string& key) const;  // a KV of type string
  // A KV of any integer type, or bool (0 or 1); empty for other types and a uint64 past int64's range.
  std::optional<int64_t> int_value(const std::string& key) const;
  // An array KV of any integer type; empty for other types or where a uint64 is past int64's range.
  std::optional<std::vector<int64_t>> int_array_value(const std::string& key) const;

 private:
  GgufFile() = default;
  struct Kv {
    uint32_t type = 0;
    uint32_t element_type = 0;  // arrays: their elements' type
    uint64_t count = 0;         // arrays: their length
    uint64_t at = 0;            // where the value (an array's first element) starts in the file
  };
  std::string path_;
  void* map_ = nullptr;
  size_t map_size_ = 0;
  const uint8_t* data_ = nullptr;
  uint32_t version_ = 0;
  uint32_t alignment_ = 32;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t> index_;
  std::map<std::string, Kv> kvs_;
};

struct GgufTensorToWrite {
  std::string name;
  plan::WeightFormat format;
  std::vector<int64_t> shape;  // outermost first (written reversed, as GGUF's ne)
  const void* data;            // plan::format_bytes(format, numel) bytes
};

// Writes a GGUF v3 file through a temporary file in the same folder, renamed into place only when
// complete: string KVs, uint32 KVs (a `general.alignment` among them sets the alignment, 32 otherwise) and
// int32 array KVs (city96's `comfy.gguf.orig_shape.<name>`). Throws InputError (with the OS's reason) when
// the folder is not writable or the disk is full.
void write_gguf(const std::string& path, const std::vector<GgufTensorToWrite>& tensors,
                const std::map<std::string, std::string>& strings, const std::map<std::string, uint32_t>& uints = {},
                const std::map<std::string, std::vector<int32_t>>& int_arrays = {});

}  // namespace studio::io

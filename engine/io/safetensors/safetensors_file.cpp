#include "io/safetensors/safetensors_file.h"

#include <sys/mman.h>

#include <algorithm>
#include <set>
#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "io/files/mapped_file.h"
#include "io/files/whole_file.h"
#include "plan/error.h"
#include "plan/human_bytes.h"

namespace studio::io {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors data is little-endian");

namespace {

constexpr uint64_t kMaxHeaderBytes = 100u << 20;  // the format's own reference limit

struct DTypeName {
  DType dtype;
  const char* name;
  size_t size;
};
constexpr DTypeName kDTypes[] = {
    {DType::F64, "F64", 8}, {DType::F32, "F32", 4}, {DType::F16, "F16", 2}, {DType::BF16, "BF16", 2},
    {DType::I64, "I64", 8}, {DType::I32, "I32", 4}, {DType::I16, "I16", 2}, {DType::I8, "I8", 1},
    {DType::U8, "U8", 1},   {DType::BOOL, "BOOL", 1}, {DType::F8_E4M3, "F8_E4M3", 1}, {DType::F8_E5M2, "F8_E5M2", 1},
};

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw InputError(path + ": " + what); }

}  // namespace

size_t dtype_size(DType d) {
  for (const auto& e : kDTypes)
    if (e.dtype == d) return e.size;
  return 0;
}

const char* dtype_name(DType d) {
  for (const auto& e : kDTypes)
    if (e.dtype == d) return e.name;
  return "?";
}

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (auto s : shape) n *= s;
  return n;
}

namespace {

// The shape's element count and byte count, or false when either overflows 63 bits.
bool checked_bytes(const std::vector<int64_t>& shape, size_t dtype_bytes, uint64_t& bytes) {
  int64_t n = 1;
  for (auto s : shape)
    if (__builtin_mul_overflow(n, s, &n)) return false;
  int64_t b = 0;
  if (__builtin_mul_overflow(n, int64_t(dtype_bytes), &b)) return false;
  bytes = uint64_t(b);
  return true;
}

}  // namespace

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::shared_ptr<const SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  std::shared_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = path;
  const auto [map, size] = map_whole_file(path, 8, "the 8-byte header length");
  f->map_ = map;
  f->map_size_ = size;
  const auto* bytes = static_cast<const uint8_t*>(map);

  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes, 8);
  if (header_len > kMaxHeaderBytes)
    fail(path, "header length " + std::to_string(header_len) + " is over the 100 MB limit: not a safetensors file?");
  if (8 + header_len > size)
    fail(path, "header runs past the end of the file (header " + std::to_string(header_len) + " bytes, file " +
                   std::to_string(size) + " bytes): truncated or not a safetensors file");
  f->data_ = bytes + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;

  if (header_len == 0 || bytes[8] != '{')
    fail(path, "the header does not start with '{': not a safetensors file");
  nlohmann::json header;
  std::set<std::string> names;
  std::string twice;
  // nlohmann keeps the last of two equal keys; the format forbids them, so they are caught as parsed.
  auto on_key = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    if (depth == 1 && event == nlohmann::json::parse_event_t::key && !names.insert(parsed.get<std::string>()).second &&
        twice.empty())
      twice = parsed.get<std::string>();
    return true;
  };
  try {
    header = nlohmann::json::parse(bytes + 8, bytes + 8 + header_len, on_key);
  } catch (const std::exception& e) {
    fail(path, std::string("header is not valid JSON (") + e.what() + ")");
  }
  if (!header.is_object()) fail(path, "header is not a JSON object");
  if (!twice.empty()) fail(path, "tensor '" + twice + "' is named twice in the header");
  // A file cut short (an interrupted download or copy) is said as such, with how much of it is there.
  uint64_t described = 0;
  for (const auto& [name, v] : header.items())
    if (name != "__metadata__" && v.is_object() && v.contains("data_offsets") && v["data_offsets"].is_array() &&
        v["data_offsets"].size() == 2 && v["data_offsets"][1].is_number_unsigned())
      described = std::max(described, v["data_offsets"][1].get<uint64_t>());
  if (described > data_size)
    fail(path, "truncated: the file holds " + plan::human_bytes(size) + " of the " +
                   plan::human_bytes(8 + header_len + described) +
                   " its header describes (an interrupted download or copy?); fetch or copy it again");

  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (it->is_object())
        for (auto m = it->begin(); m != it->end(); ++m)
          if (m->is_string()) f->metadata_[m.key()] = m->get<std::string>();
      continue;
    }
    const std::string& name = it.key();
    const auto& v = *it;
    auto bad = [&](const std::string& why) { fail(path, "tensor '" + name + "': " + why); };
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
      bad("entry needs dtype, shape and data_offsets");
    TensorInfo t;
    t.name = name;
    const std::string dt = v["dtype"].is_string() ? v["dtype"].get<std::string>() : v["dtype"].dump();
    bool known = false;
    for (const auto& e : kDTypes)
      if (dt == e.name) t.dtype = e.dtype, known = true;
    if (!known) bad("unknown dtype '" + dt + "' (this reader takes F64, F32, F16, BF16, F8_E4M3, F8_E5M2 and integer types)");
    if (!v["shape"].is_array()) bad("shape is not a list");
    for (const auto& d : v["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0) bad("shape " + v["shape"].dump() + " has a bad dimension");
      t.shape.push_back(d.get<int64_t>());
    }
    const auto& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      bad("data_offsets is not a pair of byte offsets");
    t.begin = off[0].get<uint64_t>();
    t.end = off[1].get<uint64_t>();
    if (t.end < t.begin) bad("data_offsets end before they begin");
    uint64_t want = 0;
    if (!checked_bytes(t.shape, dtype_size(t.dtype), want))
      bad("shape " + shape_str(t.shape) + " of " + dt + " has more bytes than any file can hold");
    if (t.end - t.begin != want)
      bad("shape " + shape_str(t.shape) + " of " + dt + " needs " + std::to_string(want) + " bytes, data_offsets give " +
          std::to_string(t.end - t.begin));
    f->index_[name] = f->tensors_.size();
    f->tensors_.push_back(std::move(t));
  }
  // The tensors' bytes, in order, must tile the data section exactly.
  std::vector<const TensorInfo*> by_offset;
  for (const auto& t : f->tensors_) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](const TensorInfo* a, const TensorInfo* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t covered = 0;
  const TensorInfo* previous = nullptr;
  auto where = [](const TensorInfo* t) {
    return "tensor '" + t->name + "' (bytes " + std::to_string(t->begin) + " to " + std::to_string(t->end) + ")";
  };
  for (const TensorInfo* t : by_offset) {
    if (t->begin < covered)
      fail(path, where(t) + " overlaps " + where(previous) + "; the format gives every tensor bytes of its own");
    if (t->begin > covered)
      fail(path, std::to_string(t->begin - covered) + " bytes before " + where(t) +
                     " belong to no tensor; the format requires the tensors to cover the data section exactly");
    covered = t->end;
    previous = t;
  }
  if (covered != data_size)
    fail(path, std::to_string(data_size - covered) + " bytes after the last tensor's data belong to no tensor; " +
                   "the format requires the tensors to cover the data section exactly (a damaged or padded file?)");
  return f;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) munmap(map_, map_size_);
}

const TensorInfo* SafetensorsFile::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    int64_t n = 1;
    for (auto s : t.shape) n *= s;
    const uint64_t bytes = uint64_t(n) * dtype_size(t.dtype);
    header[t.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');  // keeps the data 8-byte aligned
  const uint64_t hlen = h.size();

  write_whole_file(path, [&](const PutBytes& put) {
    put(&hlen, 8);
    put(h.data(), h.size());
    for (const auto& t : tensors) {
      int64_t n = 1;
      for (auto s : t.shape) n *= s;
      put(t.data, size_t(n) * dtype_size(t.dtype));
    }
  });
}

}  // namespace studio::io

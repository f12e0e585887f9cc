#include "io/gguf/gguf_file.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "io/files/mapped_file.h"
#include "io/files/whole_file.h"
#include "plan/error.h"

namespace studio::io {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "GGUF's values are read as they lie in the file");

namespace {

constexpr uint32_t kDefaultAlignment = 32;
constexpr uint32_t kMaxDims = 4;                             // ggml's GGML_MAX_DIMS
constexpr int kMaxArrayDepth = 8;                            // arrays of arrays: bounds the reader's recursion
constexpr uint64_t kMaxOrigDims = 64;                        // torch's limit
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;                  // key length, type, a one-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;  // name length, n_dims, one dim, type, offset

// GGUF's value types, numbered as in the file.
enum ValueType : uint32_t { U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64, kValueTypes };
constexpr const char* kValueTypeNames[kValueTypes] = {"uint8",  "int8",    "uint16", "int16",  "uint32",
                                                      "int32",  "float32", "bool",   "string", "array",
                                                      "uint64", "int64",   "float64"};
constexpr uint64_t kValueTypeBytes[kValueTypes] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};  // 0: sized in the file

// ggml's types that plan/weight_format.h does not read, named for the message that refuses them.
struct GgmlTypeName {
  uint32_t type;
  const char* name;
};
constexpr GgmlTypeName kUnreadGgmlTypes[] = {
    {9, "Q8_1"},   {15, "Q8_K"},  {16, "IQ2_XXS"}, {17, "IQ2_XS"}, {18, "IQ3_XXS"}, {19, "IQ1_S"}, {20, "IQ4_NL"},
    {21, "IQ3_S"}, {22, "IQ2_S"}, {23, "IQ4_XS"},  {24, "I8"},     {25, "I16"},     {26, "I32"},   {27, "I64"},
    {28, "F64"},   {29, "IQ1_M"}, {34, "TQ1_0"},   {35, "TQ2_0"},  {39, "MXFP4"},
};

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw InputError(path + ": " + what); }

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <typename T>
std::string list_str(const std::vector<T>& values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "]";
}

bool is_integer(uint32_t type) { return type <= I32 || type == U64 || type == I64; }

// The integer of `type` at `p`; empty for a uint64 past int64's range.
std::optional<int64_t> integer_at(const uint8_t* p, uint32_t type) {
  switch (type) {
    case U8: return load<uint8_t>(p);
    case I8: return load<int8_t>(p);
    case U16: return load<uint16_t>(p);
    case I16: return load<int16_t>(p);
    case U32: return load<uint32_t>(p);
    case I32: return load<int32_t>(p);
    case I64: return load<int64_t>(p);
    case U64: {
      const uint64_t v = load<uint64_t>(p);
      if (v > uint64_t(INT64_MAX)) return std::nullopt;
      return int64_t(v);
    }
    default: return std::nullopt;
  }
}

// The formats a GGUF file can hold (the table's, less fp8, which GGUF has not), for messages.
std::string ggml_format_names() {
  std::string out;
  const std::string names = plan::weight_format_names() + ", ";
  for (size_t at = 0, comma; (comma = names.find(", ", at)) != std::string::npos; at = comma + 2) {
    const std::string name = names.substr(at, comma - at);
    if (plan::format_info(*plan::weight_format_named(name)).ggml_type >= 0) out += (out.empty() ? "" : ", ") + name;
  }
  return out;
}

// Reads the file front to back; every read is checked against its end first. `what` names the part being
// read, for the messages.
struct Cursor {
  const std::string& path;
  const uint8_t* bytes;
  uint64_t size;
  uint64_t pos;
  std::string what;

  uint64_t left() const { return size - pos; }
  void need(uint64_t n) const {
    if (n > left())
      fail(path, "truncated: " + what + " needs " + std::to_string(n) + " bytes at byte " + std::to_string(pos) +
                     ", past the end of the file (" + std::to_string(size) + " bytes)");
  }
  template <typename T>
  T get() {
    need(sizeof(T));
    pos += sizeof(T);
    return load<T>(bytes + pos - sizeof(T));
  }
  void skip(uint64_t n) {
    need(n);
    pos += n;
  }
  std::string str() {
    const uint64_t n = get<uint64_t>();
    need(n);
    pos += n;
    return std::string(reinterpret_cast<const char*>(bytes + pos - n), n);
  }
  // A count of items of at least `min_bytes` each, refused when the bytes left could not hold them (so
  // that nothing is sized by a number the file merely claims).
  uint64_t count(const std::string& items, uint64_t min_bytes) {
    const uint64_t n = get<uint64_t>();
    if (n > left() / min_bytes)
      fail(path, what + " claims " + std::to_string(n) + " " + items + ", more than the " + std::to_string(left()) +
                     " bytes left in the file could hold: truncated or not a GGUF file");
    return n;
  }
  void known_type(uint32_t type) const {
    if (type >= kValueTypes)
      fail(path, what + " has value type " + std::to_string(type) +
                     ", which GGUF does not define (its types are 0, uint8, to 12, float64)");
  }
};

struct Value {
  uint32_t type, element_type;
  uint64_t count, at;
};

// Checks and steps over a value of `type`; says where it lies.
Value read_value(Cursor& c, uint32_t type, int depth) {
  c.known_type(type);
  Value v{type, 0, 0, c.pos};
  if (type == STRING) {
    c.skip(c.get<uint64_t>());
  } else if (type == ARRAY) {
    if (depth == kMaxArrayDepth)
      fail(c.path, c.what + " nests arrays more than " + std::to_string(kMaxArrayDepth) + " deep; GGUF's are flat");
    v.element_type = c.get<uint32_t>();
    c.known_type(v.element_type);
    const uint64_t bytes = kValueTypeBytes[v.element_type];
    const uint64_t min_bytes = bytes ? bytes : v.element_type == STRING ? 8 : 4 + 8;
    v.count = c.count(std::string(kValueTypeNames[v.element_type]) + " elements", min_bytes);
    v.at = c.pos;
    if (bytes)
      c.skip(v.count * bytes);  // cannot overflow: count() bounded it by the bytes left
    else
      for (uint64_t i = 0; i < v.count; ++i) read_value(c, v.element_type, depth + 1);
  } else {
    c.skip(kValueTypeBytes[type]);
  }
  return v;
}

std::string where(const GgufTensor& t) {
  return "tensor '" + t.name + "' (bytes " + std::to_string(t.offset) + " to " + std::to_string(t.offset + t.bytes) +
         " of the data section)";
}

}  // namespace

int64_t GgufTensor::numel() const {
  int64_t n = 1;
  for (auto s : shape) n *= s;
  return n;
}

std::shared_ptr<const GgufFile> GgufFile::open(const std::string& path) {
  std::shared_ptr<GgufFile> f(new GgufFile());
  f->path_ = path;
  const auto [map, size] = map_whole_file(path, 1, "GGUF's 24-byte header");
  f->map_ = map;
  f->map_size_ = size;
  const auto* bytes = static_cast<const uint8_t*>(map);

  if (size >= 4 && std::memcmp(bytes, "GGUF", 4) != 0) {
    std::string found;
    for (int i = 0; i < 4; ++i) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", bytes[i]);
      found += bytes[i] >= 0x20 && bytes[i] < 0x7f ? std::string(1, char(bytes[i])) : std::string(hex);
    }
    fail(path, "starts with \"" + found + "\", not \"GGUF\": not a GGUF file");
  }
  if (size < 24) fail(path, "truncated: " + std::to_string(size) + " bytes, shorter than GGUF's 24-byte header");
  Cursor c{path, bytes, size, 4, "the header"};
  f->version_ = c.get<uint32_t>();
  if (f->version_ == 1)
    fail(path, "GGUF version 1 is not read (an early 2023 format, with 32-bit counts); the versions read are 2 and 3: "
               "convert the model again with a current gguf tool");
  if (f->version_ != 2 && f->version_ != 3) {
    const uint32_t swapped = __builtin_bswap32(f->version_);
    if (swapped == 2 || swapped == 3)
      fail(path, "a big-endian GGUF file (version " + std::to_string(swapped) +
                     "); this reader reads little-endian ones, as gguf tools write them by default");
    fail(path, "GGUF version " + std::to_string(f->version_) + " is not read; the versions read are 2 and 3");
  }
  const uint64_t tensor_count = c.count("tensors", kMinTensorInfoBytes);
  const uint64_t kv_count = c.count("keys", kMinKvBytes);

  for (uint64_t i = 0; i < kv_count; ++i) {
    c.what = "key " + std::to_string(i) + "'s name";
    const std::string key = c.str();
    c.what = "key '" + key + "'";
    const Value v = read_value(c, c.get<uint32_t>(), 0);
    if (!f->kvs_.emplace(key, Kv{v.type, v.element_type, v.count, v.at}).second)
      fail(path, "key '" + key + "' is given twice; GGUF gives each key once");
  }
  auto alignment = f->kvs_.find("general.alignment");
  if (alignment != f->kvs_.end()) {
    if (alignment->second.type != U32)
      fail(path, std::string("general.alignment is a ") + kValueTypeNames[alignment->second.type] +
                     "; GGUF makes it a uint32");
    f->alignment_ = load<uint32_t>(bytes + alignment->second.at);
    if (f->alignment_ == 0 || (f->alignment_ & (f->alignment_ - 1)) != 0)
      fail(path, "general.alignment is " + std::to_string(f->alignment_) + ", not a power of two: a damaged file");
  }

  for (uint64_t i = 0; i < tensor_count; ++i) {
    c.what = "tensor " + std::to_string(i) + "'s name";
    GgufTensor t;
    t.name = c.str();
    c.what = "tensor '" + t.name + "'";
    const uint32_t n_dims = c.get<uint32_t>();
    if (n_dims < 1 || n_dims > kMaxDims)
      fail(path, c.what + " has " + std::to_string(n_dims) + " dimensions; GGUF tensors have 1 to 4 (city96's " +
                     "files keep a longer shape in the key comfy.gguf.orig_shape." + t.name + ")");
    std::vector<uint64_t> ne(n_dims);
    for (auto& d : ne) d = c.get<uint64_t>();
    const uint32_t type = c.get<uint32_t>();
    t.offset = c.get<uint64_t>();
    int64_t numel = 1;
    for (uint64_t d : ne) {
      if (d == 0 || d > uint64_t(INT64_MAX))
        fail(path, c.what + " has dimensions ne = " + list_str(ne) + "; each must be at least 1 (and below 2^63)");
      if (__builtin_mul_overflow(numel, int64_t(d), &numel))
        fail(path, c.what + " has dimensions ne = " + list_str(ne) + ", more elements than any file can hold");
    }
    const auto format = plan::weight_format_of_ggml_type(type);
    if (!format) {
      std::string name;
      for (const auto& u : kUnreadGgmlTypes)
        if (u.type == type) name = std::string(" (") + u.name + ")";
      fail(path, c.what + " has ggml type " + std::to_string(type) + name + ", which is not read; the types read are " +
                     ggml_format_names());
    }
    t.format = *format;
    const auto& info = plan::format_info(t.format);
    if (ne[0] % uint64_t(info.block_values) != 0)
      fail(path, c.what + " is " + info.name + " with rows of " + std::to_string(ne[0]) + " values (ne[0]), not a " +
                     "whole number of its " + std::to_string(info.block_values) + "-value blocks");
    if (uint64_t(numel / info.block_values) > uint64_t(INT64_MAX) / uint64_t(info.block_bytes))
      fail(path, c.what + " of " + info.name + " with ne = " + list_str(ne) + " has more bytes than any file can hold");
    t.bytes = plan::format_bytes(t.format, uint64_t(numel));
    if (t.offset % f->alignment_ != 0)
      fail(path, c.what + " starts at byte " + std::to_string(t.offset) + " of the data section, not a multiple of " +
                     "the alignment, " + std::to_string(f->alignment_));
    t.shape.assign(ne.rbegin(), ne.rend());
    if (!f->index_.emplace(t.name, f->tensors_.size()).second)
      fail(path, c.what + " is named twice; GGUF gives each tensor a name of its own");
    f->tensors_.push_back(std::move(t));
  }

  // The data section starts at the first aligned byte after the tensor infos.
  const uint64_t data_start = (c.pos + f->alignment_ - 1) / f->alignment_ * f->alignment_;
  if (data_start > size && !f->tensors_.empty())
    fail(path, "truncated: the data section starts at byte " + std::to_string(data_start) +
                   " (the tensor infos end at " + std::to_string(c.pos) + ", rounded up to the alignment " +
                   std::to_string(f->alignment_) + "), past the end of the file (" + std::to_string(size) + " bytes)");
  const uint64_t data_size = data_start <= size ? size - data_start : 0;
  f->data_ = bytes + std::min(data_start, size);
  std::vector<const GgufTensor*> by_offset;
  for (const auto& t : f->tensors_) {
    if (t.offset > data_size || t.bytes > data_size - t.offset)
      fail(path, "truncated: " + where(t) + " runs past the end of the data section, which holds " +
                     std::to_string(data_size) + " bytes");
    by_offset.push_back(&t);
  }
  std::sort(by_offset.begin(), by_offset.end(), [](const GgufTensor* a, const GgufTensor* b) {
    return a->offset != b->offset ? a->offset < b->offset : a->bytes < b->bytes;
  });
  for (size_t i = 1; i < by_offset.size(); ++i)
    if (by_offset[i]->offset < by_offset[i - 1]->offset + by_offset[i - 1]->bytes)
      fail(path, where(*by_offset[i]) + " overlaps " + where(*by_offset[i - 1]) +
                     "; GGUF gives every tensor bytes of its own");

  // city96's ComfyUI-GGUF keeps the torch shape of a tensor it had to reshape (more than 4 dimensions).
  for (auto& t : f->tensors_) {
    const std::string key = "comfy.gguf.orig_shape." + t.name;
    const auto kv = f->kvs_.find(key);
    if (kv == f->kvs_.end()) continue;
    const auto dims = kv->second.type == ARRAY && kv->second.count <= kMaxOrigDims ? f->int_array_value(key)
                                                                                  : std::nullopt;
    if (!dims)
      fail(path, "key " + key + " is not a list of at most " + std::to_string(kMaxOrigDims) + " integers; it " +
                     "must give tensor '" + t.name + "''s shape before it was flattened");
    int64_t numel = 1;
    bool fits = true;
    for (int64_t d : *dims) fits = fits && d >= 1 && !__builtin_mul_overflow(numel, d, &numel);
    if (!fits || numel != t.numel())
      fail(path, "key " + key + " gives the shape " + list_str(*dims) + ", which does not hold tensor '" + t.name +
                     "''s " + std::to_string(t.numel()) + " elements (" + list_str(t.shape) + "); it must give " +
                     "the shape before the tensor was flattened, every dimension at least 1");
    t.shape = *dims;
  }
  return f;
}

GgufFile::~GgufFile() {
  if (map_) munmap(map_, map_size_);
}

const GgufTensor* GgufFile::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

std::vector<std::string> GgufFile::keys() const {
  std::vector<std::string> out;
  for (const auto& kv : kvs_) out.push_back(kv.first);
  return out;
}

std::optional<std::string> GgufFile::string_value(const std::string& key) const {
  auto it = kvs_.find(key);
  if (it == kvs_.end() || it->second.type != STRING) return std::nullopt;
  const auto* p = static_cast<const uint8_t*>(map_) + it->second.at;
  return std::string(reinterpret_cast<const char*>(p + 8), load<uint64_t>(p));
}

std::optional<int64_t> GgufFile::int_value(const std::string& key) const {
  auto it = kvs_.find(key);
  if (it == kvs_.end()) return std::nullopt;
  const auto* p = static_cast<const uint8_t*>(map_) + it->second.at;
  if (it->second.type == BOOL) return *p != 0;
  return integer_at(p, it->second.type);
}

std::optional<std::vector<int64_t>> GgufFile::int_array_value(const std::string& key) const {
  auto it = kvs_.find(key);
  if (it == kvs_.end() || it->second.type != ARRAY || !is_integer(it->second.element_type)) return std::nullopt;
  const Kv& kv = it->second;
  const auto* p = static_cast<const uint8_t*>(map_) + kv.at;
  std::vector<int64_t> out;
  out.reserve(kv.count);
  for (uint64_t i = 0; i < kv.count; ++i) {
    const auto v = integer_at(p + i * kValueTypeBytes[kv.element_type], kv.element_type);
    if (!v) return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

void write_gguf(const std::string& path, const std::vector<GgufTensorToWrite>& tensors,
                const std::map<std::string, std::string>& strings, const std::map<std::string, uint32_t>& uints,
                const std::map<std::string, std::vector<int32_t>>& int_arrays) {
  const auto a = uints.find("general.alignment");
  const uint64_t alignment = a == uints.end() ? kDefaultAlignment : a->second;
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    fail(path, "general.alignment " + std::to_string(alignment) + " is not a power of two");
  auto padding = [&](uint64_t n) { return (alignment - n % alignment) % alignment; };

  std::string h = "GGUF";
  auto put = [&h](auto v) { h.append(reinterpret_cast<const char*>(&v), sizeof v); };
  auto put_str = [&](const std::string& s) {
    put(uint64_t(s.size()));
    h += s;
  };
  put(uint32_t(3));
  put(uint64_t(tensors.size()));
  put(uint64_t(strings.size() + uints.size() + int_arrays.size()));
  for (const auto& [key, value] : strings) {
    put_str(key);
    put(uint32_t(STRING));
    put_str(value);
  }
  for (const auto& [key, value] : uints) {
    put_str(key);
    put(uint32_t(U32));
    put(value);
  }
  for (const auto& [key, values] : int_arrays) {
    put_str(key);
    put(uint32_t(ARRAY));
    put(uint32_t(I32));
    put(uint64_t(values.size()));
    for (int32_t v : values) put(v);
  }
  std::vector<uint64_t> sizes;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    put_str(t.name);
    put(uint32_t(t.shape.size()));
    int64_t numel = 1;
    for (auto d = t.shape.rbegin(); d != t.shape.rend(); ++d) {
      put(uint64_t(*d));
      numel *= *d;
    }
    put(uint32_t(plan::format_info(t.format).ggml_type));
    put(offset);
    sizes.push_back(plan::format_bytes(t.format, uint64_t(numel)));
    offset += sizes.back() + padding(sizes.back());
  }
  h.append(padding(h.size()), '\0');

  const std::string zeros(alignment, '\0');
  write_whole_file(path, [&](const PutBytes& put) {
    put(h.data(), h.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      put(tensors[i].data, sizes[i]);
      put(zeros.data(), padding(sizes[i]));
    }
  });
}

}  // namespace studio::io

#include "text/tokenize/sentencepiece/charsmap_check.h"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace studio::text {
namespace {

uint64_t read_varint(std::string_view m, size_t& at) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (at >= m.size()) break;
    const auto b = static_cast<uint8_t>(m[at++]);
    v |= uint64_t(b & 0x7F) << shift;
    if (!(b & 0x80)) return v;
  }
  throw std::runtime_error("a varint runs past the end");
}

void skip(std::string_view m, size_t& at, uint64_t n) {
  if (n > m.size() - at) throw std::runtime_error("a field runs past the end");
  at += size_t(n);
}

// darts-clone's unit layout (sentencepiece's third_party/darts_clone): label in the low byte (MSB set on
// leaf units), a has-leaf bit, and an offset to the children's block.
struct Unit {
  uint32_t bits;
  bool has_leaf() const { return (bits >> 8) & 1; }
  uint32_t value() const { return bits & ((1U << 31) - 1); }
  uint32_t label() const { return bits & ((1U << 31) | 0xFF); }
  uint32_t offset() const { return (bits >> 10) << ((bits & (1U << 9)) >> 6); }
};

}  // namespace

std::string_view proto_bytes_field(std::string_view message, int number) {
  std::string_view found;
  size_t at = 0;
  while (at < message.size()) {
    const uint64_t tag = read_varint(message, at);
    switch (tag & 7) {
      case 0: read_varint(message, at); break;
      case 1: skip(message, at, 8); break;
      case 5: skip(message, at, 4); break;
      case 2: {
        const uint64_t n = read_varint(message, at);
        const size_t start = at;
        skip(message, at, n);
        if (tag >> 3 == uint64_t(number)) found = message.substr(start, size_t(n));
        break;
      }
      default: throw std::runtime_error("unsupported wire type " + std::to_string(tag & 7));
    }
  }
  return found;
}

std::string charsmap_problem(std::string_view blob) {
  if (blob.empty()) return "";
  uint32_t trie_bytes = 0;
  if (blob.size() < sizeof trie_bytes) return "it is shorter than its 4-byte header";
  std::memcpy(&trie_bytes, blob.data(), sizeof trie_bytes);  // little-endian, as written on x86 and ARM
  if (trie_bytes >= blob.size() - sizeof trie_bytes)
    return "its trie (" + std::to_string(trie_bytes) + " bytes) runs past the map (" + std::to_string(blob.size()) +
           " bytes)";
  const size_t units = trie_bytes / sizeof(uint32_t);
  if (units == 0) return "its trie is empty";
  const char* trie = blob.data() + sizeof trie_bytes;
  const std::string_view strings = blob.substr(sizeof trie_bytes + trie_bytes);
  const auto unit = [&](size_t i) {
    Unit u{};
    std::memcpy(&u.bits, trie + i * sizeof u.bits, sizeof u.bits);
    return u;
  };

  // Every state the walk can reach: from a state s, an input byte c reads unit s ^ c, and a matching
  // label moves to (s ^ c) ^ offset; a leaf's value is an offset into the strings, read up to its NUL.
  std::vector<bool> seen(units, false);
  std::vector<size_t> todo{unit(0).offset()};
  while (!todo.empty()) {
    const size_t s = todo.back();
    todo.pop_back();
    if ((s | 0xFF) >= units)
      return "a trie node points to unit " + std::to_string(s) + ", outside the trie's " + std::to_string(units);
    if (seen[s]) continue;
    seen[s] = true;
    for (uint32_t c = 0; c < 256; ++c) {
      const Unit u = unit(s ^ c);
      if (u.label() != c) continue;
      const size_t next = (s ^ c) ^ u.offset();
      if (u.has_leaf()) {
        if (next >= units)
          return "a leaf points to unit " + std::to_string(next) + ", outside the trie's " + std::to_string(units);
        const uint32_t v = unit(next).value();
        if (v >= strings.size() || strings.find('\0', v) == std::string_view::npos)
          return "a replacement starts at byte " + std::to_string(v) + " of its " + std::to_string(strings.size()) +
                 "-byte strings and has no end there";
      }
      todo.push_back(next);
    }
  }
  return "";
}

std::string model_charsmap_problem(std::string_view model_proto) {
  // ModelProto: 3 normalizer_spec, 5 denormalizer_spec; NormalizerSpec: 2 precompiled_charsmap.
  const std::pair<int, const char*> specs[] = {{3, "normaliser"}, {5, "denormaliser"}};
  try {
    for (const auto& [field, name] : specs) {
      const std::string problem = charsmap_problem(proto_bytes_field(proto_bytes_field(model_proto, field), 2));
      if (!problem.empty()) return std::string("its ") + name + "'s character map is damaged: " + problem;
    }
  } catch (const std::runtime_error& e) {
    return std::string("it is not a well-formed model (") + e.what() + ")";
  }
  return "";
}

}  // namespace studio::text

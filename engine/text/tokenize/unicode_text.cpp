#include "text/tokenize/unicode_text.h"

#include <initializer_list>
#include <utility>

namespace studio::text::unicode {

namespace {

using Range = std::pair<char32_t, char32_t>;

bool in(char32_t c, std::initializer_list<Range> ranges) {
  for (const auto& [lo, hi] : ranges)
    if (c >= lo && c <= hi) return true;
  return false;
}

}  // namespace

std::u32string decode(const std::string& s) {
  std::u32string out;
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    const int len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    char32_t c = len == 1 ? b : len == 2 ? b & 0x1F : len == 3 ? b & 0x0F : b & 0x07;
    bool ok = len > 0 && i + len <= s.size();
    for (int k = 1; ok && k < len; ++k) {
      const auto cont = static_cast<unsigned char>(s[i + k]);
      ok = (cont >> 6) == 2;
      c = (c << 6) | (cont & 0x3F);
    }
    if (!ok) {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    out.push_back(c);
    i += len;
  }
  return out;
}

std::string encode(char32_t c) {
  std::string out;
  if (c < 0x80) {
    out += char(c);
  } else if (c < 0x800) {
    out += char(0xC0 | (c >> 6));
    out += char(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += char(0xE0 | (c >> 12));
    out += char(0x80 | ((c >> 6) & 0x3F));
    out += char(0x80 | (c & 0x3F));
  } else {
    out += char(0xF0 | (c >> 18));
    out += char(0x80 | ((c >> 12) & 0x3F));
    out += char(0x80 | ((c >> 6) & 0x3F));
    out += char(0x80 | (c & 0x3F));
  }
  return out;
}

std::string encode(const std::u32string& text) {
  std::string out;
  for (char32_t c : text) out += encode(c);
  return out;
}

bool is_whitespace(char32_t c) {
  return in(c, {{0x09, 0x0D}, {0x1C, 0x20}, {0x85, 0x85}, {0xA0, 0xA0}, {0x1680, 0x1680}, {0x2000, 0x200A},
                {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}});
}

bool is_control(char32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  return in(c, {{0x00, 0x1F}, {0x7F, 0x9F}, {0xAD, 0xAD}, {0x600, 0x605}, {0x61C, 0x61C}, {0x6DD, 0x6DD},
                {0x70F, 0x70F}, {0x180E, 0x180E}, {0x200B, 0x200F}, {0x202A, 0x202E}, {0x2060, 0x2064},
                {0x2066, 0x206F}, {0xE000, 0xF8FF}, {0xFEFF, 0xFEFF}, {0xFFF9, 0xFFFB}, {0xE0000, 0xE007F},
                {0xF0000, 0x10FFFF}});
}

bool is_cjk_ideograph(char32_t c) {
  return in(c, {{0x4E00, 0x9FFF}, {0x3400, 0x4DBF}, {0x20000, 0x2A6DF}, {0x2A700, 0x2B73F}, {0x2B740, 0x2B81F},
                {0x2B820, 0x2CEAF}, {0xF900, 0xFAFF}, {0x2F800, 0x2FA1F}});
}

bool is_number(char32_t c) {
  return in(c, {{'0', '9'}, {0xB2, 0xB3}, {0xB9, 0xB9}, {0xBC, 0xBE}, {0x660, 0x669}, {0x6F0, 0x6F9},
                {0x966, 0x96F}, {0x2070, 0x2070}, {0x2074, 0x2079}, {0x2080, 0x2089}, {0x2150, 0x2182},
                {0x2185, 0x2189}, {0x2460, 0x249B}, {0x24EA, 0x24FF}, {0x2776, 0x2793}, {0x3007, 0x3007},
                {0x3021, 0x3029}, {0xFF10, 0xFF19}});
}

bool is_letter(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  if (c < 0xC0) return c == 0xAA || c == 0xB5 || c == 0xBA;
  if (c == 0xD7 || c == 0xF7 || is_number(c) || is_whitespace(c) || is_control(c)) return false;
  // Modifier symbols, combining marks, Greek and Cyrillic signs, punctuation, symbols, arrows, shapes,
  // CJK punctuation, half/full-width forms, emoji.
  return !in(c, {{0x2C2, 0x2C5}, {0x2D2, 0x2DF}, {0x2E5, 0x2EB}, {0x2ED, 0x2ED}, {0x2EF, 0x36F},
                 {0x375, 0x375}, {0x37E, 0x37E}, {0x384, 0x385}, {0x387, 0x387}, {0x3F6, 0x3F6},
                 {0x482, 0x489}, {0x55A, 0x55F}, {0x589, 0x58A}, {0x60C, 0x60D}, {0x61B, 0x61F},
                 {0x64B, 0x65F}, {0x66A, 0x66D}, {0x964, 0x965}, {0x2000, 0x2BFF}, {0x2E00, 0x2FFF},
                 {0x3000, 0x3004}, {0x3008, 0x3020}, {0x3030, 0x3030}, {0x3099, 0x309C}, {0x30A0, 0x30A0},
                 {0x30FB, 0x30FB}, {0x3200, 0x33FF}, {0xFE00, 0xFE0F}, {0xFE30, 0xFE6F}, {0xFF01, 0xFF20},
                 {0xFF3B, 0xFF40}, {0xFF5B, 0xFF65}, {0xFFE0, 0xFFFF}, {0x1F000, 0x1FAFF}});
}

std::u32string to_lower(char32_t c) {
  auto even_upper = [&](char32_t lo, char32_t hi) { return c >= lo && c <= hi && (c - lo) % 2 == 0; };
  if ((c >= 'A' && c <= 'Z') || (c >= 0xC0 && c <= 0xDE && c != 0xD7)) return {char32_t(c + 32)};
  if (c == 0x130) return {U'i', 0x307};
  if (c == 0x178) return {0xFF};
  if (even_upper(0x100, 0x12F) || even_upper(0x132, 0x137) || even_upper(0x139, 0x148) ||
      even_upper(0x14A, 0x177) || even_upper(0x179, 0x17E) || even_upper(0x460, 0x481) ||
      even_upper(0x48A, 0x4BF) || even_upper(0x1E00, 0x1E95) || even_upper(0x1EA0, 0x1EFF))
    return {char32_t(c + 1)};
  if ((c >= 0x391 && c <= 0x3AB && c != 0x3A2) || (c >= 0x410 && c <= 0x42F) || (c >= 0xFF21 && c <= 0xFF3A))
    return {char32_t(c + 32)};
  if (c >= 0x400 && c <= 0x40F) return {char32_t(c + 80)};
  if (c == 0x386) return {0x3AC};
  if (c >= 0x388 && c <= 0x38A) return {char32_t(c + 37)};
  if (c == 0x38C) return {0x3CC};
  if (c == 0x38E || c == 0x38F) return {char32_t(c + 63)};
  return {c};
}

}  // namespace studio::text::unicode

#include "text/tokenize/prompt_clean.h"

#include <iterator>

#include "text/tokenize/html_entities.h"
#include "text/tokenize/unicode_nfc.h"
#include "text/tokenize/unicode_text.h"

namespace studio::text {

namespace {

using Text = std::u32string;

// NFKC of U+FF5F..U+FFEE where it is one character (0: unchanged); U+FF01..U+FF5E are ASCII's shifted, and
// U+FFE3 (fullwidth macron) becomes a space and a combining macron. Made from Python's unicodedata.
constexpr char32_t kWidths[] = {
    0x2985, 0x2986, 0x3002, 0x300C, 0x300D, 0x3001, 0x30FB, 0x30F2, 0x30A1, 0x30A3, 0x30A5, 0x30A7, 0x30A9, 0x30E3,
    0x30E5, 0x30E7, 0x30C3, 0x30FC, 0x30A2, 0x30A4, 0x30A6, 0x30A8, 0x30AA, 0x30AB, 0x30AD, 0x30AF, 0x30B1, 0x30B3,
    0x30B5, 0x30B7, 0x30B9, 0x30BB, 0x30BD, 0x30BF, 0x30C1, 0x30C4, 0x30C6, 0x30C8, 0x30CA, 0x30CB, 0x30CC, 0x30CD,
    0x30CE, 0x30CF, 0x30D2, 0x30D5, 0x30D8, 0x30DB, 0x30DE, 0x30DF, 0x30E0, 0x30E1, 0x30E2, 0x30E4, 0x30E6, 0x30E8,
    0x30E9, 0x30EA, 0x30EB, 0x30EC, 0x30ED, 0x30EF, 0x30F3, 0x3099, 0x309A, 0x1160, 0x1100, 0x1101, 0x11AA, 0x1102,
    0x11AC, 0x11AD, 0x1103, 0x1104, 0x1105, 0x11B0, 0x11B1, 0x11B2, 0x11B3, 0x11B4, 0x11B5, 0x111A, 0x1106, 0x1107,
    0x1108, 0x1121, 0x1109, 0x110A, 0x110B, 0x110C, 0x110D, 0x110E, 0x110F, 0x1110, 0x1111, 0x1112, 0, 0, 0, 0x1161,
    0x1162, 0x1163, 0x1164, 0x1165, 0x1166, 0, 0, 0x1167, 0x1168, 0x1169, 0x116A, 0x116B, 0x116C, 0, 0, 0x116D,
    0x116E, 0x116F, 0x1170, 0x1171, 0x1172, 0, 0, 0x1173, 0x1174, 0x1175, 0, 0, 0, 0xA2, 0xA3, 0xAC, 0, 0xA6, 0xA5,
    0x20A9, 0, 0x2502, 0x2190, 0x2191, 0x2192, 0x2193, 0x25A0, 0x25CB,
};

// ftfy's own unescape_html: "&name;" or "&#...;" of at most 24 letters and digits; a numeric one only
// when html.unescape reads it whole.
Text ftfy_unescape(const Text& s) {
  auto alnum = [](char32_t c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  Text out;
  for (size_t i = 0; i < s.size();) {
    size_t k = i + 1;
    if (s[i] == '&' && k < s.size() && s[k] == '#') ++k;
    const size_t from = k;
    while (s[i] == '&' && k < s.size() && k - from < 25 && alnum(s[k])) ++k;
    if (s[i] != '&' || k == from || k - from > 24 || k >= s.size() || s[k] != ';') {
      out.push_back(s[i++]);
      continue;
    }
    const Text ref = s.substr(i, k + 1 - i);
    if (const char32_t c = html::named_entity(std::u32string_view(ref).substr(1))) {
      out.push_back(c);
    } else if (ref[1] == '#') {
      const Text decoded = html::unescape(ref);
      out += decoded.find(';') == Text::npos ? decoded : ref;
    } else {
      out += ref;
    }
    i = k + 1;
  }
  return out;
}

// Windows-1252 for U+0080..U+009F ("sloppy": its five holes stay as they are).
constexpr char32_t kC1[32] = {0x20AC, 0x81,   0x201A, 0x192,  0x201E, 0x2026, 0x2020, 0x2021, 0x2C6,  0x2030, 0x160,
                              0x2039, 0x152,  0x8D,   0x17D,  0x8F,   0x90,   0x2018, 0x2019, 0x201C, 0x201D, 0x2022,
                              0x2013, 0x2014, 0x2DC,  0x2122, 0x161,  0x203A, 0x153,  0x9D,   0x17E,  0x178};

const char32_t* ligature(char32_t c) {
  switch (c) {
    case 0x132: return U"IJ";
    case 0x133: return U"ij";
    case 0x149: return U"\u02BCn";
    case 0x1F1: return U"DZ";
    case 0x1F2: return U"Dz";
    case 0x1F3: return U"dz";
    case 0x1C4: return U"D\u017D";
    case 0x1C5: return U"D\u017E";
    case 0x1C6: return U"d\u017E";
    case 0x1C7: return U"LJ";
    case 0x1C8: return U"Lj";
    case 0x1C9: return U"lj";
    case 0x1CA: return U"NJ";
    case 0x1CB: return U"Nj";
    case 0x1CC: return U"nj";
    case 0xFB00: return U"ff";
    case 0xFB01: return U"fi";
    case 0xFB02: return U"fl";
    case 0xFB03: return U"ffi";
    case 0xFB04: return U"ffl";
    case 0xFB05: return U"\u017Ft";
    case 0xFB06: return U"st";
    default: return nullptr;
  }
}

// ftfy's per-character fixes, in its order: C1 controls, ligatures, widths, quotes.
void fix_character(char32_t c, Text& out) {
  if (c >= 0x80 && c <= 0x9F) c = kC1[c - 0x80];
  if (const char32_t* parts = ligature(c)) {
    out += parts;
    return;
  }
  if (c == 0x3000) c = ' ';
  else if (c >= 0xFF01 && c <= 0xFF5E) c = c - 0xFF01 + 0x21;
  else if (c == 0xFFE3) {
    out += U" \u0304";
    return;
  } else if (c >= 0xFF5F && c < 0xFF5F + std::size(kWidths) && kWidths[c - 0xFF5F]) c = kWidths[c - 0xFF5F];
  if (c == 0x2BC || (c >= 0x2018 && c <= 0x201B)) c = '\'';
  else if (c >= 0x201C && c <= 0x201F) c = '"';
  out.push_back(c);
}

bool removed_control(char32_t c) {
  return c <= 0x08 || c == 0x0B || (c >= 0x0E && c <= 0x1F) || c == 0x7F || (c >= 0x206A && c <= 0x206F) ||
         c == 0xFEFF || (c >= 0xFFF9 && c <= 0xFFFC);
}

Text fix_segment_once(const Text& s, bool unescape) {
  Text t = unescape ? ftfy_unescape(s) : s;
  Text chars;
  for (char32_t c : t) fix_character(c, chars);
  // Line breaks: CRLF, CR, U+2028, U+2029, U+0085 (already an ellipsis by now, as in ftfy).
  Text lines;
  for (size_t i = 0; i < chars.size(); ++i) {
    const char32_t c = chars[i];
    if (c == '\r' && i + 1 < chars.size() && chars[i + 1] == '\n') continue;
    lines.push_back(c == '\r' || c == 0x2028 || c == 0x2029 || c == 0x85 ? char32_t('\n') : c);
  }
  // Terminal escapes (ESC [ digits-and-semicolons letter), then invisible controls.
  Text out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i] == 0x1B && i + 1 < lines.size() && lines[i + 1] == '[') {
      size_t k = i + 2;
      while (k < lines.size() && ((lines[k] >= '0' && lines[k] <= '9') || lines[k] == ';')) ++k;
      if (k < lines.size() && ((lines[k] | 0x20) >= 'a' && (lines[k] | 0x20) <= 'z')) {
        i = k;
        continue;
      }
    }
    if (!removed_control(lines[i])) out.push_back(lines[i]);
  }
  return unicode::nfc(out);
}

// ftfy.fix_text: line by line, each fixed until it stops changing; a '<' turns HTML unescaping off for
// that line and every later one.
Text fix_text(const Text& text) {
  Text out;
  bool unescape = true;
  for (size_t from = 0; from < text.size();) {
    const size_t nl = text.find('\n', from);
    const size_t to = nl == Text::npos ? text.size() : nl + 1;
    Text segment = text.substr(from, to - from);
    if (segment.find('<') != Text::npos) unescape = false;
    for (;;) {
      Text fixed = fix_segment_once(segment, unescape);
      if (fixed == segment) break;
      segment = std::move(fixed);
    }
    out += segment;
    from = to;
  }
  return out;
}

}  // namespace

std::string clean_wan_prompt(const std::string& utf8) {
  const Text text = html::unescape(html::unescape(fix_text(unicode::decode(utf8))));
  // Runs of whitespace to one space, none at either end (the strip between is implied).
  Text out;
  bool space = false;
  for (char32_t c : text) {
    if (unicode::is_whitespace(c)) {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return unicode::encode(out);
}

}  // namespace studio::text

// The few Unicode facts a tokenizer's text cleaning needs (Python's str.lower, unicodedata's categories),
// without a Unicode library: exact for ASCII, Latin-1, Latin Extended-A and Additional, Greek and
// Cyrillic; elsewhere the usual punctuation, symbol and emoji blocks are symbols and the rest letters.
#pragma once
#include <string>

namespace studio::text::unicode {

// UTF-8 to code points; a malformed byte becomes U+FFFD.
std::u32string decode(const std::string& utf8);
std::string encode(const std::u32string& text);
std::string encode(char32_t c);

bool is_whitespace(char32_t c);  // Python's str.split() separators
bool is_control(char32_t c);     // categories Cc, Cf, Co (not tab, newline, carriage return)
bool is_cjk_ideograph(char32_t c);
bool is_number(char32_t c);      // \p{N}
bool is_letter(char32_t c);      // \p{L}
std::u32string to_lower(char32_t c);  // one or two code points (U+0130 becomes i + combining dot)

}  // namespace studio::text::unicode

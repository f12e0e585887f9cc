// Unicode normalisation form C (Python's unicodedata.normalize("NFC", ...)) from tables generated out of
// Unicode 14.0: canonical decomposition, canonical ordering of combining marks, canonical composition,
// Hangul by arithmetic. Not covered: the CJK compatibility ideographs (U+F900-FAFF, U+2F800-2FA1F),
// which NFC maps to their unified ideographs; they are left as they are.
#pragma once
#include <string>

namespace studio::text::unicode {

std::u32string nfc(const std::u32string& text);
int combining_class(char32_t c);  // canonical combining class; 0 for starters

}  // namespace studio::text::unicode

// Wan's prompt cleaning (diffusers' prompt_clean in pipeline_wan.py): ftfy.fix_text with its defaults,
// html.unescape twice, strip, then every run of whitespace made one space and the ends stripped.
// What ftfy.fix_text does to text that was never mis-decoded, repeated on each line until nothing changes:
// HTML references ending in ';' decoded (unless a '<' was seen, which ftfy takes for real HTML), C1
// controls read as Windows-1252, Latin ligatures split (ﬁ -> fi), full- and half-width forms made
// standard (Ａ -> A, ｶ -> カ, U+3000 -> space), curly quotes straightened, line breaks made '\n', terminal
// colour escapes and invisible control characters removed, and NFC.
// Not done: ftfy's mojibake repair (re-decoding text that was decoded with the wrong encoding, "sÃ³" ->
// "só"), upper-cased named references (&EACUTE;), HTML5's names beyond HTML 4's (text/tokenize/html_entities.h)
// and NFC of the CJK compatibility ideographs (text/tokenize/unicode_nfc.h). Torch-free.
#pragma once
#include <string>

namespace studio::text {

// UTF-8 in, UTF-8 out; malformed bytes become U+FFFD first.
std::string clean_wan_prompt(const std::string& text);

}  // namespace studio::text

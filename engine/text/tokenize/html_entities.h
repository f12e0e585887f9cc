// HTML character references (&amp; &#233; &#xE9;) decoded as Python's html.unescape decodes them: every
// numeric reference, with or without its ';' (the Windows-1252 replacements for 128-159, U+FFFD for 0,
// surrogates and anything past U+10FFFF, nothing for the other control characters and non-characters),
// and the named ones of HTML 4 plus &apos; (the longest legacy name that prefixes an unknown one, as
// "&copy2024" -> "©2024"). HTML5's other 2,000 names (&NotSubset; ...) are left as written.
#pragma once
#include <string>
#include <string_view>

namespace studio::text::html {

std::u32string unescape(const std::u32string& text);

// The character that a named reference stands for, its name given with the ';' ("amp;"); 0 if unknown.
char32_t named_entity(std::u32string_view name);

}  // namespace studio::text::html

// ByT5's tokenizer (transformers' ByT5Tokenizer): each UTF-8 byte is its own token, id byte + 3 (0 is padding,
// 1 the end, 2 unknown), except the added tokens of added_tokens.json (<extra_id_N>, and the glyph encoder's
// <color-N>, <en-font-N>, ...), found in the text first, whole, the longest at the leftmost place. Torch-free.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "text/tokenize/added_tokens.h"

namespace studio::text {

class ByT5Tokenizer {
 public:
  // tokenizer_2/ (or tokenizer/) of a diffusers folder: added_tokens.json, when it has one.
  static ByT5Tokenizer load(const std::string& dir);

  std::vector<int64_t> tokenize(const std::string& text) const;

  struct Encoded {
    std::vector<int64_t> ids;   // max_length: the text's ids (cut to leave room for the end), the end, padding
    std::vector<int64_t> mask;  // 1 up to and with the end, 0 for padding
  };
  Encoded encode(const std::string& text, size_t max_length) const;

  static constexpr int64_t kPad = 0, kEnd = 1, kOffset = 3;

 private:
  AddedTokens added_;
};

}  // namespace studio::text

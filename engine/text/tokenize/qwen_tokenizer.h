// Qwen2's tokenizer (tokenizers' Qwen2TokenizerFast from tokenizer.json, as Qwen2.5-VL ships it): the added
// tokens (<|im_start|>, <|endoftext|>, ...) found in the text first, exactly as written, the longest at the
// leftmost place; the text between them NFC-normalised, split by Qwen2's pattern (contractions, a run of letters
// with at most one other character before it, each digit alone, runs of other symbols with the line breaks after
// them, whitespace), and each piece's bytes merged by byte-level BPE (text/tokenize/byte_bpe.h). No start or end
// token is added. Torch-free.
//
// Unicode: letters and numbers as text/tokenize/unicode_text.h classes them (exact for the common scripts, CJK,
// punctuation and emoji blocks).
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "text/tokenize/added_tokens.h"
#include "text/tokenize/byte_bpe.h"

namespace studio::text {

class QwenTokenizer {
 public:
  // tokenizer/ of a transformers folder: tokenizer.json (a byte-level BPE model) and tokenizer_config.json (the
  // pad token). InputError naming the file for anything missing or malformed.
  static QwenTokenizer load(const std::string& dir);

  std::vector<int64_t> tokenize(const std::string& text) const;

  struct Encoded {
    std::vector<int64_t> ids;   // max_length: the text's ids, cut on the right, then the pad token
    std::vector<int64_t> mask;  // 1 for the text's ids, 0 for padding
    size_t untruncated = 0;     // the text's ids before the cut
  };
  Encoded encode(const std::string& text, size_t max_length) const;

  int64_t pad_id() const { return pad_; }
  int64_t id_of_added(const std::string& token) const;  // InputError when the tokenizer has no such token

 private:
  std::unordered_map<std::string, int64_t> vocab_;
  MergeRanks merge_rank_;
  AddedTokens added_;
  int64_t pad_ = 0;
  std::string file_;  // tokenizer.json, for messages
};

// Qwen2's pre-tokenizer pattern over NFC text: the pieces, in order, that together are the text.
std::vector<std::u32string> qwen_pieces(const std::u32string& text);

}  // namespace studio::text

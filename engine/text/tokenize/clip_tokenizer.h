// CLIP's tokenizer (transformers' slow CLIPTokenizer without ftfy, as most installs run it): the text is
// cleaned as transformers' BasicTokenizer cleans it (control characters dropped, whitespace collapsed,
// spaces around CJK ideographs, lower case, accents kept), split by CLIP's pattern (contractions, runs of
// letters, single digits, runs of other symbols), each piece's UTF-8 bytes mapped to printable symbols and
// merged by byte-level BPE in merges.txt's order, the last symbol marked with "</w>". Ids:
// <|startoftext|>, the pieces (truncated), <|endoftext|>, padded with the pad token. Torch-free.
//
// Unicode: lower case and the letter/number classes are exact for ASCII, Latin-1, Latin Extended-A, Greek
// and Cyrillic; other scripts count as letters, and the usual punctuation, symbol and emoji blocks as
// symbols. NFC composition is not applied: text typed or pasted is NFC already.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "text/tokenize/byte_bpe.h"

namespace studio::text {

class ClipTokenizer {
 public:
  // tokenizer/ of a diffusers folder: vocab.json, merges.txt, and tokenizer_config.json if present.
  // Throws InputError naming the file for anything missing or malformed.
  static ClipTokenizer load(const std::string& dir);

  // The ids of the text's pieces, without <|startoftext|>, <|endoftext|> or padding.
  std::vector<int64_t> tokenize(const std::string& text) const;

  struct Encoded {
    std::vector<int64_t> ids;  // max_length ids: start, text (truncated to max_length - 2), end, pad...
    size_t untruncated = 0;    // text ids before truncation
  };
  Encoded encode(const std::string& text) const { return encode(text, model_max_length_); }
  Encoded encode(const std::string& text, size_t max_length) const;

  // The printable symbol that stands for byte b in vocab.json and merges.txt (GPT-2's byte alphabet).
  static const std::string& byte_symbol(unsigned char b);

  size_t model_max_length() const { return model_max_length_; }
  int64_t bos_id() const { return bos_; }
  int64_t eos_id() const { return eos_; }
  int64_t pad_id() const { return pad_; }

 private:
  std::vector<std::string> bpe(const std::string& piece) const;  // piece: byte symbols, in UTF-8
  int64_t id_of(const std::string& symbol) const;

  std::unordered_map<std::string, int64_t> vocab_;
  MergeRanks merge_rank_;
  int64_t bos_ = 0, eos_ = 0, pad_ = 0, unk_ = 0;
  size_t model_max_length_ = 77;
};

}  // namespace studio::text

// Gemma's tokenizer (tokenizers' GemmaTokenizerFast from tokenizer.json, as Gemma 3 ships it: SentencePiece's BPE
// converted by transformers' GemmaConverter). The added tokens (<bos>, <start_of_turn>, ...) are found in the text
// first, exactly as written; every space of the text between them becomes "▁" and the whole stretch is one word
// (no pre-tokenizer splits it: the converter's Split on " " finds none after the normalizer); its characters are
// merged by BPE, a character the vocabulary lacks entering as its UTF-8 bytes' <0xXX> tokens (byte fallback) and
// runs of unknowns as one <unk>; the post-processor's <bos> goes first. Torch-free.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "text/tokenize/added_tokens.h"
#include "text/tokenize/byte_bpe.h"

namespace studio::text {

class GemmaTokenizer {
 public:
  // tokenizer/ of a transformers folder (tokenizer.json). InputError naming the file for anything missing,
  // malformed, or laid out otherwise than Gemma's (another normalizer, pre-tokenizer or model).
  static GemmaTokenizer load(const std::string& dir);

  // The text's ids, the post-processor's <bos> first when the file adds one.
  std::vector<int64_t> tokenize(const std::string& text) const;

 private:
  std::unordered_map<std::string, int64_t> vocab_;
  MergeRanks merge_rank_;
  AddedTokens added_;
  std::string unk_;  // the unknown token as written ("<unk>"); empty: none
  bool fuse_unk_ = false;
  std::vector<int64_t> first_;  // what the post-processor puts before the text (<bos>)
  std::string file_;            // tokenizer.json, for messages
};

}  // namespace studio::text

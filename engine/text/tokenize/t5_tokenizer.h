// The T5 tokenizer (transformers' slow T5Tokenizer with legacy = true), through the sentencepiece
// library: the text is split on the added tokens (<extra_id_N>, </s>, ...), each piece of text is
// sentencepiece's own encoding (normalisation, the '▁' prefix), then truncation, </s>, and <pad> up to
// the length asked for. Torch-free, so the GUI can count a prompt's tokens as it is typed.
// sentencepiece itself is reached through a module loaded apart (lib/dit-studio/libstudio_sentencepiece.so
// beside bin/, or $STUDIO_LIB_DIR): see sentencepiece_module.cpp for why.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace studio::text {

class T5Tokenizer {
 public:
  // tokenizer/ of a diffusers folder: spiece.model, and added_tokens.json / tokenizer_config.json if present.
  static T5Tokenizer load(const std::string& dir);
  ~T5Tokenizer();
  T5Tokenizer(T5Tokenizer&&) noexcept;

  // All the ids of `text`, without </s> or padding.
  std::vector<int64_t> tokenize(const std::string& text) const;

  struct Encoded {
    std::vector<int64_t> ids;   // max_length ids: text (truncated to max_length - 1), </s>, <pad>...
    std::vector<int64_t> mask;  // 1 for text and </s>, 0 for padding
    size_t untruncated = 0;     // text ids before truncation (a prompt over the limit loses the rest)
  };
  Encoded encode(const std::string& text, size_t max_length) const;

  int64_t eos_id() const { return eos_; }
  int64_t pad_id() const { return pad_; }

 private:
  T5Tokenizer();
  struct Module;
  std::unique_ptr<Module> sp_;
  struct Added {
    std::string content;
    int64_t id;
    bool lstrip, rstrip;
  };
  std::vector<Added> added_;  // longest first, so that the longest match wins
  int64_t eos_ = 1, pad_ = 0;
};

}  // namespace studio::text

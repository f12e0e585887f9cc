#include "text/tokenize/gemma_tokenizer.h"

#include <cstdio>
#include <filesystem>
#include <utility>

#include "plan/error.h"
#include "text/tokenize/tokenizer_json.h"
#include "text/tokenize/unicode_text.h"

namespace studio::text {

namespace {

const std::string kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's written space

// SentencePiece's byte piece for b: "<0x0A>".
std::string byte_piece(unsigned char b) {
  char s[8];
  std::snprintf(s, sizeof s, "<0x%02X>", b);
  return s;
}

}  // namespace

GemmaTokenizer GemmaTokenizer::load(const std::string& dir) {
  GemmaTokenizer t;
  t.file_ = (std::filesystem::path(dir) / "tokenizer.json").string();
  const auto j = read_tokenizer_json(t.file_);
  const auto fail = [&](const std::string& why) -> InputError {
    return InputError(t.file_ + ": " + why + "; Gemma 3's tokenizer/ (SentencePiece's BPE as transformers converts "
                      "it) has it");
  };
  try {
    const auto& norm = j.at("normalizer");
    if (norm.is_null() || norm.value("type", "") != "Replace" || norm.at("pattern").value("String", "") != " " ||
        norm.value("content", "") != kSpace)
      throw fail("normalizer is not Replace(\" \", \"\xE2\x96\x81\")");
    const auto& pre = j.at("pre_tokenizer");
    if (!pre.is_null() && !(pre.value("type", "") == "Split" && pre.at("pattern").value("String", "") == " "))
      throw fail("pre_tokenizer splits the text (Gemma's has none, or a Split on \" \")");
    const auto& model = j.at("model");
    if (model.value("type", "") != "BPE" || !model.value("byte_fallback", false))
      throw fail("model is not a BPE with byte_fallback");
    for (const auto& [symbol, id] : model.at("vocab").items()) t.vocab_[symbol] = id.get<int64_t>();
    t.merge_rank_ = merge_ranks(model.at("merges"));
    if (model.contains("unk_token") && model["unk_token"].is_string() && t.vocab_.count(model["unk_token"]))
      t.unk_ = model["unk_token"].get<std::string>();
    t.fuse_unk_ = model.value("fuse_unk", false);
    for (const auto& a : j.at("added_tokens")) t.added_.emplace_back(a.at("content"), a.at("id").get<int64_t>());
    // TemplateProcessing's single sequence: the special tokens before $A.
    const auto& post = j.at("post_processor");
    if (!post.is_null() && post.value("type", "") == "TemplateProcessing") {
      for (const auto& piece : post.at("single")) {
        if (!piece.contains("SpecialToken")) break;
        const auto& special = post.at("special_tokens").at(piece["SpecialToken"].at("id").get<std::string>());
        for (const auto& id : special.at("ids")) t.first_.push_back(id.get<int64_t>());
      }
    }
  } catch (const nlohmann::json::exception& e) {
    throw fail(std::string("malformed (") + e.what() + ")");
  }
  return t;
}

std::vector<int64_t> GemmaTokenizer::tokenize(const std::string& text) const {
  std::vector<int64_t> ids = first_;
  const auto add_text = [&](const std::string& chunk) {
    std::vector<std::string> word;
    bool after_unknown = false;  // runs of unknowns fuse into one
    for (const char32_t c : unicode::decode(chunk)) {
      const std::string ch = c == U' ' ? kSpace : unicode::encode(c);
      if (vocab_.count(ch)) {
        word.push_back(ch), after_unknown = false;
        continue;
      }
      std::vector<std::string> bytes;
      for (unsigned char b : ch)
        if (auto piece = byte_piece(b); vocab_.count(piece)) bytes.push_back(std::move(piece));
      if (bytes.size() == ch.size()) {
        word.insert(word.end(), bytes.begin(), bytes.end()), after_unknown = false;
      } else if (!(after_unknown && fuse_unk_)) {
        if (unk_.empty())
          throw InputError(file_ + ": '" + ch + "' is in neither its vocabulary nor its bytes, and it has no unk_token");
        word.push_back(unk_), after_unknown = true;  // merged, if at all, as tokenizers merges the unknown's id
      }
    }
    append_merged_ids(std::move(word), merge_rank_, vocab_, file_, ids);
  };
  split_at_added(text, added_, add_text, [&](int64_t id) { ids.push_back(id); });
  return ids;
}

}  // namespace studio::text

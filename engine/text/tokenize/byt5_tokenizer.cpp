#include "text/tokenize/byt5_tokenizer.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "plan/error.h"
#include "plan/model_folder.h"

namespace fs = std::filesystem;

namespace studio::text {

ByT5Tokenizer ByT5Tokenizer::load(const std::string& dir) {
  ByT5Tokenizer t;
  t.added_ = {{"<pad>", kPad}, {"</s>", kEnd}, {"<unk>", 2}};  // the special tokens, as written
  const std::string file = (fs::path(dir) / "added_tokens.json").string();
  if (!fs::exists(file)) return t;
  try {
    const auto tokens = nlohmann::json::parse(plan::read_text_file(file));
    for (const auto& [token, id] : tokens.items()) t.added_.emplace_back(token, id.get<int64_t>());
  } catch (const nlohmann::json::exception& e) {
    throw InputError(file + ": expected an object of token -> id (" + e.what() + ")");
  }
  return t;
}

std::vector<int64_t> ByT5Tokenizer::tokenize(const std::string& text) const {
  std::vector<int64_t> ids;
  split_at_added(
      text, added_,
      [&](const std::string& bytes) {
        for (unsigned char b : bytes) ids.push_back(int64_t(b) + kOffset);
      },
      [&](int64_t id) { ids.push_back(id); });
  return ids;
}

ByT5Tokenizer::Encoded ByT5Tokenizer::encode(const std::string& text, size_t max_length) const {
  Encoded e;
  e.ids = tokenize(text);
  if (max_length < 1) max_length = 1;
  if (e.ids.size() > max_length - 1) e.ids.resize(max_length - 1);
  e.ids.push_back(kEnd);
  e.mask.assign(e.ids.size(), 1);
  e.ids.resize(max_length, kPad);
  e.mask.resize(max_length, 0);
  return e;
}

}  // namespace studio::text

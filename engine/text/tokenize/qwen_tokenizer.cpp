#include "text/tokenize/qwen_tokenizer.h"

#include <filesystem>
#include <stdexcept>

#include "plan/error.h"
#include "text/tokenize/tokenizer_json.h"
#include "text/tokenize/unicode_nfc.h"
#include "text/tokenize/unicode_text.h"

namespace fs = std::filesystem;

namespace studio::text {

namespace {

// The pattern this tokenizer implements, as tokenizer.json spells it: a file with another is refused.
constexpr const char* kQwen2Pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
    "\\s+(?!\\S)|\\s+";

// The regex's \s: Unicode's White_Space.
bool is_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
         c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}
bool is_newline(char32_t c) { return c == '\r' || c == '\n'; }
bool is_letter(char32_t c) { return unicode::is_letter(c); }
bool is_number(char32_t c) { return unicode::is_number(c); }
bool is_other(char32_t c) { return !is_space(c) && !is_letter(c) && !is_number(c); }
char32_t ascii_lower(char32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

// The length of the pattern's match at i: its alternatives tried in order, as the regex engine does.
size_t piece_at(const std::u32string& s, size_t i) {
  const size_t n = s.size();
  // 's 't 're 've 'm 'll 'd, in any case
  if (s[i] == '\'' && i + 1 < n) {
    const char32_t a = ascii_lower(s[i + 1]), b = i + 2 < n ? ascii_lower(s[i + 2]) : 0;
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  }
  // [^\r\n\p{L}\p{N}]?\p{L}+
  size_t j = i;
  if (!is_newline(s[j]) && !is_letter(s[j]) && !is_number(s[j]) && j + 1 < n && is_letter(s[j + 1])) ++j;
  if (is_letter(s[j])) {
    while (j < n && is_letter(s[j])) ++j;
    return j - i;
  }
  // \p{N}
  if (is_number(s[i])) return 1;
  // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
  j = i;
  if (s[j] == ' ' && j + 1 < n && is_other(s[j + 1])) ++j;
  if (is_other(s[j])) {
    while (j < n && is_other(s[j])) ++j;
    while (j < n && is_newline(s[j])) ++j;
    return j - i;
  }
  // What is left starts with whitespace. \s*[\r\n]+: up to the run's last line break.
  size_t end = i;
  while (end < n && is_space(s[end])) ++end;
  for (size_t k = end; k > i; --k)
    if (is_newline(s[k - 1])) return k - i;
  // \s+(?!\S): the run, less its last character when a non-space follows; else \s+.
  if (end < n && end - i >= 2) return end - i - 1;
  return end - i;
}

}  // namespace

std::vector<std::u32string> qwen_pieces(const std::u32string& text) {
  std::vector<std::u32string> out;
  for (size_t i = 0; i < text.size();) {
    const size_t len = piece_at(text, i);
    out.push_back(text.substr(i, len));
    i += len;
  }
  return out;
}

QwenTokenizer QwenTokenizer::load(const std::string& dir) {
  QwenTokenizer t;
  t.file_ = (fs::path(dir) / "tokenizer.json").string();
  const auto j = read_tokenizer_json(t.file_);
  const auto fail = [&](const std::string& why) -> InputError {
    return InputError(t.file_ + ": " + why + "; a Qwen2 tokenizer folder (Qwen2.5-VL's tokenizer/) has it");
  };
  try {
    const auto& model = j.at("model");
    if (model.value("type", "") != "BPE") throw fail("model.type is not \"BPE\"");
    const auto& pre = j.at("pre_tokenizer");
    bool qwen_split = false;
    for (const auto& p : pre.value("pretokenizers", nlohmann::json::array({pre})))
      qwen_split = qwen_split || (p.value("type", "") == "Split" && p.contains("pattern") &&
                                  p["pattern"].value("Regex", "") == kQwen2Pattern);
    if (!qwen_split) throw fail("pre_tokenizer is not Qwen2's split pattern");
    for (const auto& [symbol, id] : model.at("vocab").items()) t.vocab_[symbol] = id.get<int64_t>();
    t.merge_rank_ = merge_ranks(model.at("merges"));
    for (const auto& a : j.at("added_tokens")) t.added_.emplace_back(a.at("content"), a.at("id").get<int64_t>());
  } catch (const nlohmann::json::exception& e) {
    throw fail(std::string("malformed (") + e.what() + ")");
  }
  std::string pad = "<|endoftext|>";
  const std::string config = (fs::path(dir) / "tokenizer_config.json").string();
  if (fs::exists(config)) {
    const auto c = read_tokenizer_json(config);
    if (c.contains("pad_token") && c["pad_token"].is_string()) pad = c["pad_token"];
    if (c.contains("pad_token") && c["pad_token"].is_object()) pad = c["pad_token"].value("content", pad);
  }
  t.pad_ = t.id_of_added(pad);
  return t;
}

int64_t QwenTokenizer::id_of_added(const std::string& token) const {
  for (const auto& [content, id] : added_)
    if (content == token) return id;
  throw InputError(file_ + ": no added token '" + token + "'; is this a Qwen2 tokenizer?");
}

std::vector<int64_t> QwenTokenizer::tokenize(const std::string& text) const {
  std::vector<int64_t> ids;
  const auto add_text = [&](const std::string& chunk) {
    for (const auto& piece : qwen_pieces(unicode::nfc(unicode::decode(chunk)))) {
      std::vector<std::string> word;
      for (unsigned char b : unicode::encode(piece)) word.push_back(byte_symbol(b));
      append_merged_ids(std::move(word), merge_rank_, vocab_, file_, ids);
    }
  };
  split_at_added(text, added_, add_text, [&](int64_t id) { ids.push_back(id); });
  return ids;
}

QwenTokenizer::Encoded QwenTokenizer::encode(const std::string& text, size_t max_length) const {
  Encoded e;
  e.ids = tokenize(text);
  e.untruncated = e.ids.size();
  if (e.ids.size() > max_length) e.ids.resize(max_length);
  e.mask.assign(e.ids.size(), 1);
  e.ids.resize(max_length, pad_);
  e.mask.resize(max_length, 0);
  return e;
}

}  // namespace studio::text

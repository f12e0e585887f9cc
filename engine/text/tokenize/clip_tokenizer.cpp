#include "text/tokenize/clip_tokenizer.h"

#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "plan/error.h"
#include "plan/model_folder.h"
#include "text/tokenize/added_tokens.h"
#include "text/tokenize/byte_bpe.h"
#include "text/tokenize/unicode_text.h"

namespace fs = std::filesystem;

namespace studio::text {

namespace {

constexpr const char* kStart = "<|startoftext|>";
constexpr const char* kEnd = "<|endoftext|>";

// transformers' BasicTokenizer (no accent stripping, no punctuation split) then CLIP's pattern: the
// pieces BPE is run on, as UTF-8.
std::vector<std::string> split_pieces(const std::string& text) {
  std::u32string s;
  for (char32_t c : unicode::decode(text)) {
    if (c == 0 || c == 0xFFFD || unicode::is_control(c)) continue;
    if (unicode::is_whitespace(c)) {
      s += U' ';
    } else if (unicode::is_cjk_ideograph(c)) {
      s += U' ';
      s += c;
      s += U' ';
    } else {
      s += unicode::to_lower(c);
    }
  }
  std::vector<std::string> pieces;
  const std::u32string start = unicode::decode(kStart), end = unicode::decode(kEnd);
  auto at = [&](size_t i, const std::u32string& w) { return s.compare(i, w.size(), w) == 0; };
  for (size_t i = 0; i < s.size();) {
    size_t j = i + 1;
    const char32_t c = s[i];
    if (at(i, start) || at(i, end)) {
      j = i + (at(i, start) ? start.size() : end.size());
    } else if (c == U'\'' && (at(i, U"'s") || at(i, U"'t") || at(i, U"'m") || at(i, U"'d"))) {
      j = i + 2;
    } else if (c == U'\'' && (at(i, U"'re") || at(i, U"'ve") || at(i, U"'ll"))) {
      j = i + 3;
    } else if (unicode::is_letter(c)) {
      while (j < s.size() && unicode::is_letter(s[j])) ++j;
    } else if (unicode::is_number(c)) {
      // one digit per piece
    } else if (unicode::is_whitespace(c)) {
      ++i;
      continue;
    } else {
      auto other = [](char32_t x) { return !unicode::is_whitespace(x) && !unicode::is_letter(x) && !unicode::is_number(x); };
      while (j < s.size() && other(s[j])) ++j;
    }
    pieces.push_back(unicode::encode(s.substr(i, j - i)));
    i = j;
  }
  return pieces;
}

// A special token given as a string or as {"content": ...} in tokenizer_config.json.
std::string token_text(const nlohmann::json& cfg, const char* key, const std::string& fallback) {
  if (!cfg.contains(key) || cfg[key].is_null()) return fallback;
  const auto& v = cfg[key];
  return v.is_string() ? v.get<std::string>() : v.at("content").get<std::string>();
}

}  // namespace

ClipTokenizer ClipTokenizer::load(const std::string& dir) {
  ClipTokenizer t;
  const fs::path root(dir);
  const std::string vocab = (root / "vocab.json").string(), merges = (root / "merges.txt").string();
  for (const auto& f : {vocab, merges})
    if (!fs::exists(f))
      throw InputError(dir + ": no " + fs::path(f).filename().string() + "; a CLIP tokenizer/ folder holds vocab.json "
                       "and merges.txt (download the whole model folder, or pass --prompt_embeds)");
  try {
    const auto v = nlohmann::json::parse(plan::read_text_file(vocab, 64u << 20));
    if (!v.is_object()) throw InputError(vocab + ": not a JSON object of token -> id");
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() >= (int64_t(1) << 31))
        throw InputError(vocab + ": token '" + it.key() + "' has id " + it->dump() + "; ids are integers from 0");
      t.vocab_[it.key()] = it->get<int64_t>();
    }
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(vocab + ": not a JSON object of token -> id (" + e.what() + ")");
  }
  // As transformers reads it: the first line (the version) skipped, at most 49152 - 256 - 2 merges,
  // each "first second"; the rank is the line's order.
  std::istringstream lines(plan::read_text_file(merges, 64u << 20));
  std::string line;
  std::getline(lines, line);
  for (int rank = 0; rank < 49152 - 256 - 2 && std::getline(lines, line); ++rank) {
    std::istringstream parts(line);
    std::string first, second, extra;
    if (parts >> first >> second && !(parts >> extra)) t.merge_rank_.emplace(first + " " + second, rank);
  }

  std::string bos = kStart, eos = kEnd, pad = kEnd, unk = kEnd;
  const fs::path cfg_file = root / "tokenizer_config.json";
  if (fs::exists(cfg_file)) {
    try {
      const auto cfg = nlohmann::json::parse(plan::read_text_file(cfg_file.string()));
      if (cfg.contains("added_tokens_decoder"))
        for (auto it = cfg["added_tokens_decoder"].begin(); it != cfg["added_tokens_decoder"].end(); ++it)
          t.vocab_[it->at("content").get<std::string>()] = std::stoll(it.key());
      bos = token_text(cfg, "bos_token", bos);
      eos = token_text(cfg, "eos_token", eos);
      pad = token_text(cfg, "pad_token", pad);
      unk = token_text(cfg, "unk_token", unk);
      // Some configs say "no limit" with a huge number; CLIP's own is 77.
      if (cfg.contains("model_max_length") && cfg["model_max_length"].is_number_integer()) {
        const auto n = cfg["model_max_length"].get<int64_t>();
        if (n >= 2 && n <= 4096) t.model_max_length_ = size_t(n);
      }
    } catch (const InputError&) {
      throw;
    } catch (const std::exception& e) {
      throw InputError(cfg_file.string() + ": malformed (" + e.what() + ")");
    }
  }
  auto special = [&](const std::string& name, const char* role) {
    auto it = t.vocab_.find(name);
    if (it == t.vocab_.end())
      throw InputError(vocab + ": no id for the " + role + " token '" + name + "'; is this a CLIP tokenizer folder?");
    return it->second;
  };
  t.bos_ = special(bos, "start");
  t.eos_ = special(eos, "end");
  t.pad_ = special(pad, "padding");
  t.unk_ = special(unk, "unknown");
  return t;
}

const std::string& ClipTokenizer::byte_symbol(unsigned char b) { return text::byte_symbol(b); }

int64_t ClipTokenizer::id_of(const std::string& symbol) const {
  auto it = vocab_.find(symbol);
  return it == vocab_.end() ? unk_ : it->second;
}

std::vector<std::string> ClipTokenizer::bpe(const std::string& piece) const {
  std::vector<std::string> word;
  for (unsigned char b : piece) word.push_back(text::byte_symbol(b));
  word.back() += "</w>";
  return merge_symbols(std::move(word), merge_rank_);
}

std::vector<int64_t> ClipTokenizer::tokenize(const std::string& text) const {
  // The special tokens are split off first, exactly as written, as transformers' added-token trie does.
  std::vector<int64_t> ids;
  auto add_text = [&](const std::string& chunk) {
    for (const auto& piece : split_pieces(chunk)) {
      if (piece == kStart || piece == kEnd) {
        ids.push_back(id_of(piece));
        continue;
      }
      for (const auto& symbol : bpe(piece)) ids.push_back(id_of(symbol));
    }
  };
  split_at_added(text, {{kStart, id_of(kStart)}, {kEnd, id_of(kEnd)}}, add_text, [&](int64_t id) { ids.push_back(id); });
  return ids;
}

ClipTokenizer::Encoded ClipTokenizer::encode(const std::string& text, size_t max_length) const {
  Encoded e;
  e.ids = tokenize(text);
  e.untruncated = e.ids.size();
  if (max_length < 2) max_length = 2;
  if (e.ids.size() > max_length - 2) e.ids.resize(max_length - 2);
  e.ids.insert(e.ids.begin(), bos_);
  e.ids.push_back(eos_);
  e.ids.resize(max_length, pad_);
  return e;
}

}  // namespace studio::text

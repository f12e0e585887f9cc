#include "text/tokenize/byte_bpe.h"

#include <array>
#include <climits>

#include "text/tokenize/unicode_text.h"

namespace studio::text {

const std::string& byte_symbol(unsigned char b) {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> t;
    char32_t next = 256;
    for (int v = 0; v < 256; ++v) {
      const bool printable = (v >= '!' && v <= '~') || (v >= 0xA1 && v <= 0xAC) || (v >= 0xAE && v <= 0xFF);
      t[size_t(v)] = unicode::encode(printable ? char32_t(v) : next++);
    }
    return t;
  }();
  return table[b];
}

std::vector<std::string> merge_symbols(std::vector<std::string> word, const MergeRanks& ranks) {
  while (word.size() > 1) {
    int best = INT_MAX;
    size_t at = 0;
    for (size_t i = 0; i + 1 < word.size(); ++i) {
      auto it = ranks.find(word[i] + " " + word[i + 1]);
      if (it != ranks.end() && it->second < best) {
        best = it->second;
        at = i;
      }
    }
    if (best == INT_MAX) break;
    const std::string first = word[at], second = word[at + 1];
    std::vector<std::string> merged;
    for (size_t i = 0; i < word.size(); ++i) {
      if (i + 1 < word.size() && word[i] == first && word[i + 1] == second) {
        merged.push_back(first + second);
        ++i;
      } else {
        merged.push_back(word[i]);
      }
    }
    word = std::move(merged);
  }
  return word;
}

}  // namespace studio::text

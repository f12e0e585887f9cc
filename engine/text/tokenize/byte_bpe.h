// GPT-2's byte-level BPE, shared by CLIP's and Qwen2's tokenizers: every byte of a piece becomes a printable
// symbol (so that BPE never sees a space or a control character), and neighbouring symbols are merged, the
// pair of lowest rank first, every occurrence of it left to right, until no pair has a rank.
#pragma once
#include <string>
#include <unordered_map>
#include <vector>

namespace studio::text {

// The printable symbol that stands for byte b in vocab.json and merges.txt: printable Latin-1 bytes stand for
// themselves, the rest for U+0100 + n.
const std::string& byte_symbol(unsigned char b);

using MergeRanks = std::unordered_map<std::string, int>;  // "first second" -> its line in the merges
std::vector<std::string> merge_symbols(std::vector<std::string> word, const MergeRanks& ranks);

}  // namespace studio::text

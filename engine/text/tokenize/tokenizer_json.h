// What the tokenizers that read Hugging Face's tokenizer.json share: the file parsed (an InputError naming it when it
// is not JSON), a BPE model's merges ranked, in either way tokenizers writes them ("a b", or ["a", "b"]), and a
// word's merged symbols looked up.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/tokenize/byte_bpe.h"

namespace studio::text {

nlohmann::json read_tokenizer_json(const std::string& file);
MergeRanks merge_ranks(const nlohmann::json& merges);

// `word`'s symbols merged by BPE, each merged symbol's id appended to `ids`; an InputError naming `file` for a
// symbol the vocabulary lacks.
void append_merged_ids(std::vector<std::string> word, const MergeRanks& ranks,
                       const std::unordered_map<std::string, int64_t>& vocab, const std::string& file,
                       std::vector<int64_t>& ids);

}  // namespace studio::text

// What the tokenizers that read Hugging Face's tokenizer.json share: the file parsed (an InputError naming it when it
// is not JSON), and a BPE model's merges ranked, in either way tokenizers writes them ("a b", or ["a", "b"]).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "text/tokenize/byte_bpe.h"

namespace studio::text {

nlohmann::json read_tokenizer_json(const std::string& file);
MergeRanks merge_ranks(const nlohmann::json& merges);

}  // namespace studio::text

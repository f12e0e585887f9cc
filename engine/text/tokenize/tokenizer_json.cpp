#include "text/tokenize/tokenizer_json.h"

#include "plan/error.h"
#include "plan/model_folder.h"

namespace studio::text {

nlohmann::json read_tokenizer_json(const std::string& file) {
  try {
    return nlohmann::json::parse(plan::read_text_file(file));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(file + ": not valid JSON (" + e.what() + ")");
  }
}

MergeRanks merge_ranks(const nlohmann::json& merges) {
  MergeRanks ranks;
  int rank = 0;
  for (const auto& m : merges)
    ranks.emplace(m.is_array() ? m.at(0).get<std::string>() + " " + m.at(1).get<std::string>() : m.get<std::string>(),
                  rank++);
  return ranks;
}

void append_merged_ids(std::vector<std::string> word, const MergeRanks& ranks,
                       const std::unordered_map<std::string, int64_t>& vocab, const std::string& file,
                       std::vector<int64_t>& ids) {
  for (const auto& symbol : merge_symbols(std::move(word), ranks)) {
    const auto it = vocab.find(symbol);
    if (it == vocab.end()) throw InputError(file + ": the merges make '" + symbol + "', which the vocabulary lacks");
    ids.push_back(it->second);
  }
}

}  // namespace studio::text

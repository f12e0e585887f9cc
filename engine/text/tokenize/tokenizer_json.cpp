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

}  // namespace studio::text

#include "text/tokenize/added_tokens.h"

namespace studio::text {

void split_at_added(const std::string& text, const AddedTokens& tokens,
                    const std::function<void(const std::string&)>& on_text,
                    const std::function<void(int64_t)>& on_token) {
  size_t from = 0;
  for (size_t i = 0; i < text.size();) {
    const AddedTokens::value_type* hit = nullptr;
    for (const auto& t : tokens)
      if (!t.first.empty() && text.compare(i, t.first.size(), t.first) == 0 && (!hit || t.first.size() > hit->first.size()))
        hit = &t;
    if (!hit) {
      ++i;
      continue;
    }
    on_text(text.substr(from, i - from));
    on_token(hit->second);
    i += hit->first.size();
    from = i;
  }
  on_text(text.substr(from));
}

}  // namespace studio::text

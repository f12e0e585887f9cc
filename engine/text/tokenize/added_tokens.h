// The tokens a tokenizer matches in the text before anything else (special tokens, a chat template's markers,
// ByT5's <extra_id_N>), as tokenizers' added vocabulary finds them: exactly as written, at each place the longest
// that starts there, left to right.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace studio::text {

using AddedTokens = std::vector<std::pair<std::string, int64_t>>;  // token as written -> its id

// Calls `on_text` with each stretch between added tokens (possibly empty) and `on_token` with each token's id,
// in the text's order.
void split_at_added(const std::string& text, const AddedTokens& tokens,
                    const std::function<void(const std::string&)>& on_text,
                    const std::function<void(int64_t)>& on_token);

}  // namespace studio::text

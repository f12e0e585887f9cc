// A prompt's tokens against what the model's text encoder reads, counted as it is typed with the
// torch-free tokenizers the worker uses (engine/text): T5 (CogVideoX, FLUX.1's prompt for T5), umT5 after
// Wan's prompt cleaning, CLIP (FLUX.1's prompt). The worker keeps the first tokens and drops the rest.
#pragma once
#include <QString>

#include <memory>
#include <optional>

#include "plan/job.h"
#include "text/tokenize/clip_tokenizer.h"
#include "text/tokenize/t5_tokenizer.h"

namespace studio::gui {

struct TokenCount {
  QString text;      // "12 / 15 tokens", "CLIP 80 / 75 tokens · T5 80 / 511 tokens"
  bool cut = false;  // some of the text is past a limit and will be ignored
  QString warning;   // what will be cut, when cut
};

class TokenCounter {
 public:
  // Loads the tokenizers of `model` (none: nothing is counted); a folder without them counts nothing.
  void set_model(const plan::ModelFolder* model);
  // The count for `which` ("prompt", "prompt_2", "negative_prompt") of `job` (its limits are the model's).
  std::optional<TokenCount> count(const plan::JobSpec& job, const std::string& which) const;

 private:
  std::optional<plan::ModelFolder> model_;
  std::shared_ptr<text::T5Tokenizer> t5_;
  std::optional<text::ClipTokenizer> clip_;
};

}  // namespace studio::gui

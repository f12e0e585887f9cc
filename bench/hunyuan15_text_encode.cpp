// HunyuanVideo-1.5's text encoding as a run does it (models/hunyuan15/hunyuan15_prompt.h): the prompt and the
// negative prompt in Qwen2.5-VL's chat template through its language model, and the quoted text through ByT5, on a
// folder's text encoders (bench-make-model --family hunyuan15 --text_encoders, the tokenizers copied in), float32
// on the CPU. Seconds per encode of both prompts, the best of REPEATS: on the real tokens alone (what a run
// computes) and on the pipeline's 1108 per prompt (what diffusers computes); and each prompt's chat tokens.
// Loading the encoders is not counted. Prints a markdown table.
// Usage: bench-hunyuan15-text MODEL_DIR PROMPT NEGATIVE_PROMPT [REPEATS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "models/hunyuan15/hunyuan15_prompt.h"
#include "plan/families/hunyuan15_config.h"
#include "plan/model_folder.h"

using namespace studio;

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: bench-hunyuan15-text MODEL_DIR PROMPT NEGATIVE_PROMPT [REPEATS]\n");
    return 2;
  }
  const auto folder = plan::read_model_folder(argv[1]);
  const auto& parts = folder.parts_as<plan::Hunyuan15Parts>();
  const std::vector<std::string> prompts{argv[2], argv[3]};
  const int repeats = argc > 4 ? std::max(1, std::atoi(argv[4])) : 3;
  const auto qwen = text::LlmEncoder::load(plan::part_path(folder, "text_encoder"), *parts.qwen, at::kFloat, at::kCPU,
                                            plan::kQwenHiddenState);
  const auto byt5 = text::T5Encoder::load(plan::part_path(folder, "text_encoder_2"), *folder.text_encoder, at::kFloat,
                                          at::kCPU);
  const auto tokenizer = text::QwenTokenizer::load(plan::part_path(folder, "tokenizer"));
  const auto glyph_tokenizer = text::ByT5Tokenizer::load(plan::part_path(folder, "tokenizer_2"));
  std::printf("Qwen2.5-VL-7B widths, %d layers (%d run), ByT5-small; float32 on the CPU; best of %d\n\n",
              parts.qwen->num_hidden_layers, parts.qwen_layers(), repeats);
  std::printf("| rows computed | chat tokens (prompt, negative) | seconds for both prompts |\n|---|---|---|\n");
  for (const auto rows : {models::hunyuan15::Rows::Real, models::hunyuan15::Rows::All}) {
    double best = 1e30;
    std::vector<size_t> tokens;
    for (int i = 0; i < repeats; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      const auto e = models::hunyuan15::encode_prompts(prompts, tokenizer, *qwen, glyph_tokenizer, *byt5, rows);
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      tokens = e.chat_tokens;
    }
    std::printf("| %s | %zu, %zu | %.2f |\n",
                rows == models::hunyuan15::Rows::Real ? "the real tokens (a run)" : "all 1108 (the pipeline's)",
                tokens[0], tokens[1], best);
  }
  return 0;
}

// HunyuanVideo-1.5's prompt path (HunyuanVideo15Pipeline of diffusers 0.42.1: _get_mllm_prompt_embeds and
// _get_byt5_prompt_embeds). Each prompt is put in Qwen2.5-VL's chat template with the pipeline's system message
// (an empty prompt as one space), tokenized to 1000 + 108 tokens (padded, cut on the right), run through the
// language model with its mask, and hidden_states[-3] (two layers before the last, before the final norm) kept
// from token 108 on, padding rows included. The text in double quotes ("..." or “...”) also goes, as
// `Text "A". Text "B". `, through ByT5 (256 bytes); a prompt without quotes gets zeros there, unencoded.
#pragma once
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "text/encode/llm_encoder.h"
#include "text/encode/t5_encoder.h"
#include "text/tokenize/byt5_tokenizer.h"
#include "text/tokenize/qwen_tokenizer.h"

namespace studio::models::hunyuan15 {

// The pipeline's constants.
constexpr size_t kPromptTokens = 1000;  // tokenizer_max_length
constexpr size_t kCropStart = 108;      // the template's tokens before the prompt, with Qwen2.5-VL's vocabulary
constexpr size_t kGlyphBytes = 256;

// The chat the language model reads for a prompt.
std::string chat_text(const std::string& prompt);
// The quoted text as ByT5 reads it, "" when the prompt quotes nothing.
std::string glyph_text(const std::string& prompt);

struct PromptEmbeds {
  at::Tensor input_ids, attention_mask;  // [B, 1108] int64: the chat's tokens, before the crop
  at::Tensor embeds, mask;               // [B, 1000, hidden], [B, 1000] int64 (fewer rows with Rows::Real)
  at::Tensor glyph_ids;                  // [B, 256] int64 (zeros where nothing is quoted)
  at::Tensor glyph_embeds, glyph_mask;   // [B, 256, d_model], [B, 256] int64
  std::vector<size_t> chat_tokens;       // each chat's tokens before the cut
};

// Which rows the language model computes. All: the pipeline's 1108, padding rows included (their values are the
// reference's too). Real: up to the batch's longest chat alone; as the padding is on the right and the mask causal,
// no real row depends on a padding row, so the real rows are the same, and embeds and mask end there (a run reads
// the real rows only: the transformer drops the padding; the work follows the prompt's length, not 1108).
enum class Rows { All, Real };

PromptEmbeds encode_prompts(const std::vector<std::string>& prompts, const text::QwenTokenizer& tokenizer,
                            const text::LlmEncoder& encoder, const text::ByT5Tokenizer& glyph_tokenizer,
                            const text::T5Encoder& glyph_encoder, Rows rows = Rows::All);

}  // namespace studio::models::hunyuan15

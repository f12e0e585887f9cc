#include "models/hunyuan15/hunyuan15_prompt.h"

#include <algorithm>

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/zeros.h>
#include <c10/core/InferenceMode.h>

#include "plan/families/hunyuan15_config.h"
#include "text/encode/prompt.h"

namespace studio::models::hunyuan15 {

namespace {

// The pipeline's system message, as its source spells it: the line continuations keep the next lines' indent.
constexpr const char* kSystem =
    "You are a helpful assistant. Describe the video by detailing the following aspects:         "
    "1. The main content and theme of the video.         "
    "2. The color, shape, size, texture, quantity, text, and spatial relationships of the objects.         "
    "3. Actions, events, behaviors temporal relationships, physical movement changes of the objects.         "
    "4. background environment, light, style and atmosphere.         "
    "5. camera angles, movements, and transitions used in the video.";

// Each prompt's ids, one row each: [B, L] int64.
at::Tensor rows_of(std::vector<std::vector<int64_t>>& rows) {
  std::vector<at::Tensor> out;
  for (auto& r : rows) out.push_back(text::ids_tensor(r));
  return at::cat(out, 0);
}

}  // namespace

std::string chat_text(const std::string& prompt) {
  return std::string("<|im_start|>system\n") + kSystem + "<|im_end|>\n<|im_start|>user\n" +
         (prompt.empty() ? " " : prompt) + "<|im_end|>\n<|im_start|>assistant\n";
}

std::string glyph_text(const std::string& prompt) {
  // re.findall(r'"(.*?)"|“(.*?)”'): left to right, the shortest quote that closes on the same line.
  static const std::string open_curly = "\u201c", close_curly = "\u201d";
  std::vector<std::string> found;
  for (size_t i = 0; i < prompt.size();) {
    std::string close;
    size_t start = std::string::npos;
    if (prompt[i] == '"') close = "\"", start = i + 1;
    else if (prompt.compare(i, open_curly.size(), open_curly) == 0) close = close_curly, start = i + open_curly.size();
    const size_t end = start == std::string::npos ? std::string::npos : prompt.find(close, start);
    if (end == std::string::npos || prompt.find('\n', start) < end) {
      ++i;
      continue;
    }
    found.push_back(prompt.substr(start, end - start));
    i = end + close.size();
  }
  // Repeated quotes once, in the order first seen (only when there are several, as the pipeline does).
  std::vector<std::string> unique;
  for (const auto& t : found)
    if (std::find(unique.begin(), unique.end(), t) == unique.end()) unique.push_back(t);
  std::string out;
  for (const auto& t : unique) out += "Text \"" + t + "\". ";
  return out;
}

PromptEmbeds encode_prompts(const std::vector<std::string>& prompts, const text::QwenTokenizer& tokenizer,
                            const text::LlmEncoder& encoder, const text::ByT5Tokenizer& glyph_tokenizer,
                            const text::T5Encoder& glyph_encoder, Rows rows) {
  c10::InferenceMode guard;
  PromptEmbeds out;
  std::vector<std::vector<int64_t>> ids, masks, glyph_ids, glyph_masks;
  for (const auto& p : prompts) {
    auto e = tokenizer.encode(chat_text(p), kPromptTokens + kCropStart);
    out.chat_tokens.push_back(e.untruncated);
    ids.push_back(std::move(e.ids));
    masks.push_back(std::move(e.mask));
    const std::string glyphs = glyph_text(p);
    auto g = glyph_tokenizer.encode(glyphs, kGlyphBytes);
    if (glyphs.empty()) std::fill(g.ids.begin(), g.ids.end(), 0), std::fill(g.mask.begin(), g.mask.end(), 0);
    glyph_ids.push_back(std::move(g.ids));
    glyph_masks.push_back(std::move(g.mask));
  }
  out.input_ids = rows_of(ids);
  out.attention_mask = rows_of(masks);
  const int64_t crop = int64_t(kCropStart);  // the template alone is longer, with Qwen's vocabulary
  const int64_t length =
      rows == Rows::All ? out.input_ids.size(1) : std::max(crop, out.attention_mask.sum(1).max().item<int64_t>());
  const int64_t keep = length - crop;
  const auto hidden = encoder.hidden_state(out.input_ids.narrow(1, 0, length), out.attention_mask.narrow(1, 0, length),
                                           plan::kQwenHiddenState);
  out.embeds = hidden.narrow(1, crop, keep);
  out.mask = out.attention_mask.narrow(1, crop, keep);

  out.glyph_ids = rows_of(glyph_ids);
  out.glyph_mask = rows_of(glyph_masks);
  // A prompt that quotes nothing is not encoded: its rows are zeros (and none is encoded when no prompt quotes).
  const auto quoted = out.glyph_mask.amax(1).gt(0).view({-1, 1, 1});
  if (!quoted.any().item<bool>()) {
    out.glyph_embeds =
        at::zeros({int64_t(prompts.size()), int64_t(kGlyphBytes), glyph_encoder.width()}, glyph_encoder.options());
    return out;
  }
  const auto glyph = glyph_encoder.forward(out.glyph_ids, out.glyph_mask);
  out.glyph_embeds = glyph * quoted.to(glyph.device(), glyph.scalar_type());
  return out;
}

}  // namespace studio::models::hunyuan15

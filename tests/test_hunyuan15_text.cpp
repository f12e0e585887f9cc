// HunyuanVideo-1.5's prompt path against qwen25vl_text_tiny (diffusers 0.42.1's HunyuanVideo15Pipeline with
// transformers 5.24 and tokenizers 0.23): Qwen2's byte-level BPE tokenizer and the chat template (ids and masks
// exact for six prompts: empty, short, far past the limit, CJK, emoji, quotes and digits), Qwen2.5-VL's language
// model (every hidden state of one prompt, and hidden_states[-3] cropped for all six), and the quoted text through
// ByT5. The same encoder as Qwen3 and Gemma 3: test_llm_text.
#include <ATen/ops/zeros.h>

#include <random>

#include "models/hunyuan15/hunyuan15_prompt.h"
#include "plan/error.h"
#include "plan/families/hunyuan15_config.h"
#include "plan/model_folder.h"
#include "plan/llm_config.h"
#include "plan/t5_config.h"
#include "tensor_support.h"
#include "text/tokenize/qwen_tokenizer.h"
#include "text/tokenize/unicode_text.h"

using namespace studio;

namespace {

const std::string kCase = "qwen25vl_text_tiny";

std::string part(const std::string& p) { return test::golden_case(kCase) + "/" + p; }
at::Tensor golden(const std::string& name) { return test::golden_tensor(kCase, name); }

std::shared_ptr<text::LlmEncoder> qwen(std::optional<int> reads = {}) {
  const auto file = part("text_encoder/config.json");
  return text::LlmEncoder::load(part("text_encoder"), plan::parse_llm_text_config(plan::read_text_file(file), file),
                                 at::kFloat, at::kCPU, reads);
}

std::vector<std::string> pieces(const std::string& text) {
  std::vector<std::string> out;
  for (const auto& p : text::qwen_pieces(text::unicode::decode(text))) out.push_back(text::unicode::encode(p));
  return out;
}

// Qwen2's pattern: contractions in any case, one non-letter before a letter run, every digit alone, symbols with
// the line breaks after them, whitespace up to the last line break, and the space before a word left to it.
TEST(QwenTokenizer, splits_as_qwen2s_pattern) {
  EXPECT_EQ(pieces("I'LL see it's 2024!\n\n  ok"),
            (std::vector<std::string>{"I", "'LL", " see", " it", "'s", " ", "2", "0", "2", "4", "!\n\n", " ", " ok"}));
  EXPECT_EQ(pieces("a  \n \n  b"), (std::vector<std::string>{"a", "  \n \n", " ", " b"}));
  EXPECT_EQ(pieces("x   "), (std::vector<std::string>{"x", "   "}));
  EXPECT_EQ(pieces("(100%!) & #42"), (std::vector<std::string>{"(", "1", "0", "0", "%!)", " &", " #", "4", "2"}));
}

// Whatever the text, the pieces are all of it, in order, none empty.
TEST(QwenTokenizer, pieces_cover_any_text) {
  const std::u32string alphabet = U"aZ\u00e9\u4e00\u3042 \t\n\r'0\u0663.,!\u3002\u201c\"\U0001F600\u200d\ufe0f_";
  std::mt19937 rng(7);
  for (int round = 0; round < 2000; ++round) {
    std::u32string text;
    for (int n = int(rng() % 24); n > 0; --n) text += alphabet[rng() % alphabet.size()];
    std::u32string joined;
    for (const auto& p : text::qwen_pieces(text)) {
      ASSERT_FALSE(p.empty());
      joined += p;
    }
    ASSERT_EQ(joined, text) << text::unicode::encode(text);
  }
}

TEST(QwenTokenizer, chat_ids_equal_the_reference) {
  const auto tokenizer = text::QwenTokenizer::load(part("tokenizer"));
  const auto g = test::golden_json(kCase);
  const auto ids = test::golden_ids(kCase, "input_ids"), mask = test::golden_ids(kCase, "attention_mask");
  for (size_t i = 0; i < g["prompts"].size(); ++i) {
    const std::string prompt = g["prompts"][i];
    const std::string chat = models::hunyuan15::chat_text(prompt);
    EXPECT_EQ(chat, std::string(g["rendered_chat_template"][i])) << i;
    const auto e = tokenizer.encode(chat, 1108);
    EXPECT_EQ(e.untruncated, size_t(g["template_tokens_untruncated"][i])) << i;
    EXPECT_EQ(e.ids, std::vector<int64_t>(ids[int64_t(i)].data_ptr<int64_t>(), ids[int64_t(i)].data_ptr<int64_t>() + 1108))
        << "prompt " << i;
    EXPECT_EQ(e.mask, std::vector<int64_t>(mask[int64_t(i)].data_ptr<int64_t>(), mask[int64_t(i)].data_ptr<int64_t>() + 1108))
        << "prompt " << i;
  }
}

// Every hidden state of prompt 1 (embeddings, layers 1-3, the last after the final norm), padding rows included.
TEST(LlmEncoder, every_hidden_state_equals_the_reference) {
  const auto encoder = qwen();
  const auto layers = golden("layer_hidden_states");
  const auto ids = test::golden_ids(kCase, "input_ids").narrow(0, 1, 1);
  const auto mask = test::golden_ids(kCase, "attention_mask").narrow(0, 1, 1);
  for (int i = 0; i <= encoder->num_layers(); ++i) {
    const double err = test::max_abs_diff(encoder->hidden_state(ids, mask, i)[0], layers[i]);
    std::printf("qwen25vl_text_tiny hidden state %d: %.3g\n", i, err);
    EXPECT_LT(err, test::kCallTolerance) << i;
  }
  EXPECT_TRUE(at::equal(encoder->hidden_state(ids, mask, -1), encoder->hidden_state(ids, mask, 4)));
  EXPECT_THROW(encoder->hidden_state(ids, mask, 5), std::out_of_range);

  // Loaded to read hidden_states[-3] (HunyuanVideo-1.5's): the same values, and nothing after it to ask for.
  const auto partial = qwen(plan::kQwenHiddenState);
  EXPECT_TRUE(at::equal(partial->hidden_state(ids, mask, -3), encoder->hidden_state(ids, mask, -3)));
  EXPECT_TRUE(at::equal(partial->hidden_state(ids, mask, 1), encoder->hidden_state(ids, mask, 1)));
  for (int after : {3, 4, -1}) EXPECT_THROW(partial->hidden_state(ids, mask, after), std::logic_error) << after;
  EXPECT_THROW(qwen(5), std::out_of_range);
  // Qwen2.5-VL-7B's language model: 7.1B weights, of which the pipeline's 26 of 28 layers hold 0.47B less.
  const plan::LlmTextConfig real;
  EXPECT_EQ(real.layers_for(plan::kQwenHiddenState), 26);
  EXPECT_NEAR(real.parameters() / 1e9, 7.07, 0.05);
  EXPECT_NEAR((real.parameters() - real.parameters(26)) / 1e9, 0.47, 0.01);
}

TEST(Hunyuan15Prompt, embeddings_equal_the_reference) {
  const auto g = test::golden_json(kCase);
  std::vector<std::string> prompts = g["prompts"];
  const auto t5_file = part("text_encoder_2/config.json");
  const auto byt5 = text::T5Encoder::load(part("text_encoder_2"),
                                          plan::parse_t5_config(plan::read_text_file(t5_file), t5_file), at::kFloat,
                                          at::kCPU);
  const auto out = models::hunyuan15::encode_prompts(prompts, text::QwenTokenizer::load(part("tokenizer")), *qwen(),
                                                     text::ByT5Tokenizer::load(part("tokenizer_2")), *byt5);
  EXPECT_TRUE(at::equal(out.input_ids, test::golden_ids(kCase, "input_ids")));
  EXPECT_TRUE(at::equal(out.mask, test::golden_ids(kCase, "prompt_embeds_mask")));
  const double embeds = test::max_abs_diff(out.embeds, golden("prompt_embeds"));
  std::printf("qwen25vl_text_tiny prompt_embeds: %.3g\n", embeds);
  EXPECT_LT(embeds, test::kCallTolerance);
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto& want = g["glyph_texts"][i];
    EXPECT_EQ(models::hunyuan15::glyph_text(prompts[i]), want.is_null() ? std::string() : std::string(want)) << i;
  }
  EXPECT_TRUE(at::equal(out.glyph_ids, test::golden_ids(kCase, "byt5_input_ids")));
  EXPECT_TRUE(at::equal(out.glyph_mask, test::golden_ids(kCase, "prompt_embeds_mask_2")));
  const double glyphs = test::max_abs_diff(out.glyph_embeds, golden("prompt_embeds_2"));
  std::printf("qwen25vl_text_tiny prompt_embeds_2: %.3g\n", glyphs);
  EXPECT_LT(glyphs, test::kCallTolerance);
  // A run computes each batch's real rows alone: the same values, and nothing real is left out.
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto real = models::hunyuan15::encode_prompts({prompts[i]}, text::QwenTokenizer::load(part("tokenizer")),
                                                        *qwen(), text::ByT5Tokenizer::load(part("tokenizer_2")), *byt5,
                                                        models::hunyuan15::Rows::Real);
    const int64_t n = real.mask.size(1), i64 = int64_t(i);
    EXPECT_TRUE(at::equal(real.mask[0], out.mask[i64].narrow(0, 0, n))) << i;
    EXPECT_EQ(out.mask[i64].narrow(0, n, out.mask.size(1) - n).sum().item<int64_t>(), 0) << i;
    const auto rows = real.mask[0].nonzero().squeeze(1);
    const auto want = golden("prompt_embeds")[i64].index_select(0, rows);
    EXPECT_LT(test::max_abs_diff(real.embeds[0].index_select(0, rows), want), test::kCallTolerance) << i;
    // The prompt's tokens (a byte or more each; "" is " ") and the 5 closing the chat, not the pipeline's 1000.
    if (real.chat_tokens[0] < 1108) EXPECT_LE(n, int64_t(std::max<size_t>(prompts[i].size(), 1)) + 5) << i;
  }
  // Quotes: straight or curly, the shortest, each once, never across a line.
  EXPECT_EQ(models::hunyuan15::glyph_text("say \"hi\" and \"hi\" then \u201cbye\u201d"), "Text \"hi\". Text \"bye\". ");
  EXPECT_EQ(models::hunyuan15::glyph_text("\"open\nquote\" no"), "");
}

TEST(LlmRefusals, other_tokenizers_and_configs_are_named) {
  test::TempDir tmp;
  test::copy_tree(part("tokenizer"), tmp.path("tok"));
  test::edit_json(tmp.path("tok") + "/tokenizer.json", [](nlohmann::json& j) {
    j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\s+";
  });
  EXPECT_TRUE(test::throws_with<InputError>([&] { text::QwenTokenizer::load(tmp.path("tok")); },
                                            {"tokenizer.json", "Qwen2's split pattern"}));
  auto config = nlohmann::json::parse(plan::read_text_file(part("text_encoder/config.json")));
  config["num_key_value_heads"] = 3;
  EXPECT_TRUE(test::throws_with<InputError>([&] { plan::parse_llm_text_config(config.dump(), "config.json"); },
                                            {"'num_key_value_heads'", "grouped-query"}));
  config["num_key_value_heads"] = 2;
  config["model_type"] = "llama";
  EXPECT_TRUE(test::throws_with<InputError>([&] { plan::parse_llm_text_config(config.dump(), "config.json"); },
                                            {"'model_type'", "qwen2_5_vl_text"}));
  // RoPE stretched for longer contexts (YaRN, linear, dynamic) is not what the encoder computes: named.
  config["model_type"] = "qwen3";
  config["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  EXPECT_TRUE(test::throws_with<InputError>([&] { plan::parse_llm_text_config(config.dump(), "config.json"); },
                                            {"'rope_scaling'", "yarn", "RoPE unscaled"}));
  // A language model too shallow for the hidden state HunyuanVideo-1.5 reads, named when the folder is read.
  test::copy_tree(test::golden_case("hunyuan15_tiny"), tmp.path("hy"));
  test::edit_json(tmp.path("hy") + "/text_encoder/config.json", [](nlohmann::json& j) { j["num_hidden_layers"] = 1; });
  EXPECT_TRUE(test::throws_with<InputError>([&] { plan::read_model_folder(tmp.path("hy")); },
                                            {"text_encoder/config.json", "num_hidden_layers 1", "hidden_states[-3]", "at least 2 layers"}));
}

}  // namespace

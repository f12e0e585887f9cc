// Wan's prompt path against the wan21_tiny and wan22_tiny references (diffusers 0.35.2's WanPipeline,
// transformers 4.56.2, ftfy): the cleaned prompt's ids and attention mask exactly, umT5's masked
// embeddings (zero past each prompt) to 1e-4; the cleaning rules against ftfy and html themselves; and a
// folder without its tokenizer refused with a message.
#include <cstdio>
#include <filesystem>
#include <tuple>

#include "plan/error.h"
#include "plan/job.h"
#include "plan/model_folder.h"
#include "tensor_support.h"
#include "models/family_runtime.h"
#include "text/tokenize/prompt_clean.h"
#include "text/encode/t5_encoder.h"
#include "text/tokenize/t5_tokenizer.h"

using namespace studio;
using namespace std::string_literals;

namespace {

std::vector<int64_t> values(const at::Tensor& t) {
  const auto c = t.contiguous();
  return {c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel()};
}

plan::T5Config encoder_config(const std::string& folder) {
  const std::string cfg = folder + "/text_encoder/config.json";
  return plan::parse_t5_config(plan::read_text_file(cfg), cfg);
}

plan::JobSpec job_of(const std::string& name) {
  const auto g = test::golden_json(name);
  plan::JobSpec job;
  job.prompt = g["prompt"];
  job.negative_prompt = g["negative_prompt"];
  job.max_sequence_length = g["max_sequence_length"];
  return job;
}

class WanText : public ::testing::TestWithParam<std::string> {
 protected:
  std::string folder() const { return test::golden_case(GetParam()); }
};

TEST_P(WanText, ids_and_masks_match_exactly) {
  const auto tok = text::T5Tokenizer::load(folder() + "/tokenizer");
  const auto job = job_of(GetParam());
  for (const auto& [words, ids, mask] :
       {std::tuple{job.prompt, "input_ids", "attention_mask"},
        std::tuple{job.negative_prompt, "negative_input_ids", "negative_attention_mask"}}) {
    const auto e = tok.encode(text::clean_wan_prompt(words), size_t(job.max_sequence_length));
    EXPECT_EQ(e.ids, values(test::golden_ids(GetParam(), ids))) << words;
    EXPECT_EQ(e.mask, values(test::golden_ids(GetParam(), mask))) << words;
  }
}

TEST_P(WanText, umt5_embeddings_match_the_reference) {
  EXPECT_TRUE(encoder_config(folder()).per_layer_bias);
  std::vector<std::string> log;
  const auto e = models::encode_prompts(plan::read_model_folder(folder()), job_of(GetParam()), at::kFloat, at::kCPU,
                                          [&](const std::string& line) { log.push_back(line); });
  ASSERT_EQ(e.input_ids.size(), 4u);
  for (const auto& [name, ids] : e.input_ids)
    EXPECT_EQ(values(ids), values(test::golden_ids(GetParam(), name))) << name;
  const double err = test::max_abs_diff(e.prompt_embeds, test::golden_tensor(GetParam(), "prompt_embeds"));
  const double neg =
      test::max_abs_diff(e.negative_prompt_embeds, test::golden_tensor(GetParam(), "negative_prompt_embeds"));
  std::printf("%s umT5 prompt_embeds: %.3g, negative_prompt_embeds: %.3g\n", GetParam().c_str(), err, neg);
  EXPECT_LT(err, test::kCallTolerance);
  EXPECT_LT(neg, test::kCallTolerance);
  EXPECT_FALSE(e.pooled_prompt_embeds.defined());
}

// Without the mask padding is attended to, and with layer 0's table alone the bias is T5's: both change
// the embeddings well past the tolerance, so the reference holds the encoder to each.
TEST_P(WanText, the_mask_and_every_layers_bias_matter) {
  const auto cfg = encoder_config(folder());
  const auto ids = test::golden_ids(GetParam(), "input_ids"), mask = test::golden_ids(GetParam(), "attention_mask");
  const int64_t length = mask.sum().item<int64_t>();
  const auto golden = test::golden_tensor(GetParam(), "prompt_embeds").narrow(1, 0, length);
  auto umt5 = text::T5Encoder::load(folder() + "/text_encoder", cfg, at::kFloat, at::kCPU);
  EXPECT_LT(test::max_abs_diff(umt5->forward(ids, mask).narrow(1, 0, length), golden), test::kCallTolerance);
  EXPECT_GT(test::max_abs_diff(umt5->forward(ids).narrow(1, 0, length), golden), 1e-3);
  EXPECT_GT(test::max_abs_diff(umt5->position_bias(8, 1), umt5->position_bias(8, 0)), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(Goldens, WanText, ::testing::Values("wan21_tiny", "wan22_tiny"));

// Each input's expected output is what diffusers' prompt_clean gave with the real ftfy 6.3.1, html and
// regex (Python 3.11, a throwaway venv): quotes, ligatures, widths, NFC, control characters, C1
// controls, line breaks and whitespace, named / numeric / doubly escaped / unterminated references, and
// a '<' that stops ftfy's own unescaping (for its line and the later ones).
TEST(WanPromptClean, matches_ftfy_and_html) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"\u201CA cat\u201D said \u2018hi\u2019 \u201B\u201F \u02BCok"s,
       "\"A cat\" said 'hi' '\" 'ok"s},
      {"\uFB01sh \uFB02ower \uFB00 \uFB03 \uFB04 \uFB06 \u0132 \u01C4 \u0149"s,
       "fish flower ff ffi ffl st IJ D\u017D 'n"s},
      {"\uFF21\uFF22\uFF23\uFF11\uFF12\uFF13\uFF01\uFF1F\u3000\uFF08x\uFF09 \uFF76\uFF80\uFF76\uFF85 \uFFE3"s,
       "ABC123!? (x) \u30AB\u30BF\u30AB\u30CA \u0304"s},
      {"Cafe\u0301 nai\u0308ve A\u030A \u1100\u1161\u11A8 e\u0323\u0302 \u212B \u0958"s,
       "Caf\u00E9 na\u00EFve \u00C5 \uAC01 \u1EC7 \u00C5 \u0915\u093C"s},
      {"a\x00" "b\x07" "c\x1B" "d\x7F" "e\uFEFF f\u206Ag\uFFFCh \x1B" "[31mred\x1B" "[0m"s,
       "abcde fgh red"s},
      {"\u0093quoted\u0094 \u0085 \u0080 \u0081"s,
       "\"quoted\" \u2026 \u20AC \u0081"s},
      {"  two\r\nlines\rand\u2028more\u2029\t tabs\u00A0nbsp\u2003em  "s,
       "two lines and more tabs nbsp em"s},
      {"Tom &amp; Jerry &lt;3 &quot;hi&quot; &copy; &eacute;t&eacute; &hellip; &nbsp;x &apos;"s,
       "Tom & Jerry <3 \"hi\" \u00A9 \u00E9t\u00E9 \u2026 x '"s},
      {"&#65;&#x42;&#X43; &#233; &#x1F600; &#128; &#0; &#1; &#13; &#x110000; &#55296;"s,
       "ABC \u00E9 \U0001F600 \u20AC \uFFFD \uFFFD \uFFFD"s},
      {"&amp;amp; &amp;lt; &amp;amp;amp;amp;"s,
       "& < &"s},
      {"&copy2024 &amp &ampx; &notit; &#65 &#x42x &lt"s,
       "\u00A92024 & &x; \u00ACit; A Bx <"s},
      {"&foo; &bogus &Alpha; &Omega; &rarr; &euro;"s,
       "&foo; &bogus \u0391 \u03A9 \u2192 \u20AC"s},
      {"a < b &amp;amp;amp; c"s,
       "a < b &amp; c"s},
      {"first &amp;amp;amp;\nsecond < &amp;amp;amp;"s,
       "first & second < &amp;"s},
      {"  A  \u201Cfancy\u201D   caf\u00E9\u2014with \uFB01sh  "s,
       "A \"fancy\" caf\u00E9\u2014with fish"s},
      {""s,
       ""s},
      {"   \t\n  "s,
       ""s},
  };
  for (const auto& [in, out] : cases) EXPECT_EQ(text::clean_wan_prompt(in), out) << "input: " << in;
}

TEST(WanPrompt, a_folder_without_its_tokenizer_is_named) {
  const std::string folder = test::golden_case("wan21_tiny");
  test::TempDir tmp;
  test::copy_tree(folder + "/tokenizer", tmp.path("tokenizer"));
  std::filesystem::remove(tmp.path("tokenizer/spiece.model"));
  EXPECT_TRUE(test::throws_with<InputError>([&] { text::T5Tokenizer::load(tmp.path("tokenizer")); },
                                            {"tokenizer: no spiece.model", "--prompt_embeds"}));
  auto model = plan::read_model_folder(folder);
  model.has_tokenizer = false;
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] { models::encode_prompts(model, job_of("wan21_tiny"), at::kFloat, at::kCPU, [](const std::string&) {}); },
      {"no tokenizer/ (T5's spiece.model)", "--prompt_embeds"}));
  auto job = job_of("wan21_tiny");
  job.max_sequence_length = 0;
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] { models::encode_prompts(plan::read_model_folder(folder), job, at::kFloat, at::kCPU, [](const std::string&) {}); },
      {"max_sequence_length 0"}));
}

}  // namespace

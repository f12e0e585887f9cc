// HunyuanVideo-1.5's prompt path against qwen25vl_text_tiny (diffusers 0.42.1's HunyuanVideo15Pipeline with
// transformers 5.24 and tokenizers 0.23): Qwen2's byte-level BPE tokenizer and the chat template (ids and masks
// exact for six prompts: empty, short, far past the limit, CJK, emoji, quotes and digits), Qwen2.5-VL's language
// model (every hidden state of one prompt, and hidden_states[-3] cropped for all six), and the quoted text through
// ByT5. The same encoder as Qwen3 and Gemma 3 against transformers on tiny models of tests/data.
#include <ATen/ops/zeros.h>

#include <random>

#include "io/weights/tensor_file.h"
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

// A tiny model of tests/data/NAME (made by its make_NAME.py with transformers) against transformers' every hidden
// state of three rows: whole, padded on the right, padded on the left (compared where they have tokens).
void expect_hidden_states_of(const std::string& name) {
  const std::string dir = std::string(test::source_dir()) + "/tests/data/" + name;
  const auto cfg = plan::parse_llm_text_config(plan::read_text_file(dir + "/config.json"), dir + "/config.json");
  const auto encoder = text::LlmEncoder::load(dir, cfg, at::kFloat, at::kCPU);
  const io::TensorFile reference(dir + "/reference.safetensors", "reference");
  const auto ids = reference.get_int64("input_ids"), mask = reference.get_int64("attention_mask");
  const auto states = reference.get("hidden_states", 4, "[layers + 1, B, L, hidden]");
  ASSERT_EQ(states.size(0), encoder->num_layers() + 1);
  for (int i = 0; i <= encoder->num_layers(); ++i) {
    const auto got = encoder->hidden_state(ids, mask, i);
    for (int64_t row = 0; row < ids.size(0); ++row) {
      const auto tokens = mask[row].nonzero().flatten();
      const double err = test::max_abs_diff(got[row].index_select(0, tokens), states[i][row].index_select(0, tokens));
      std::printf("%s hidden state %d, row %lld: %.3g\n", name.c_str(), i, static_cast<long long>(row), err);
      EXPECT_LT(err, test::kCallTolerance) << name << " " << i << " " << row;
    }
  }
}

// Qwen3 against transformers' Qwen3Model: heads of their own width (head_dim 16 at hidden 48 and 4 heads), an RMS
// norm over each head of q and k, biases on q, k, v and o (its attention_bias).
TEST(LlmEncoder, qwen3_hidden_states_equal_transformers) {
  const std::string config = std::string(test::source_dir()) + "/tests/data/qwen3_tiny/config.json";
  const auto cfg = plan::parse_llm_text_config(plan::read_text_file(config), config);
  EXPECT_EQ(cfg.head_dim(), 16);
  EXPECT_TRUE(cfg.qk_norm && cfg.qkv_bias && cfg.o_bias && !cfg.gemma);
  expect_hidden_states_of("qwen3_tiny");
}

// Gemma 3's language model against transformers' Gemma3TextModel: scaled embeddings, 1 + weight norms, four norms
// a layer, q/k norms, tanh-GELU, scores scaled by query_pre_attn_scalar (24, not head_dim 16), local layers over a
// sliding window of 4 of the 9 tokens with RoPE at base 10000, global ones at 1e6 scaled linearly by 8.
TEST(LlmEncoder, gemma3_hidden_states_equal_transformers) {
  const std::string config = std::string(test::source_dir()) + "/tests/data/gemma3_tiny/config.json";
  const auto cfg = plan::parse_llm_text_config(plan::read_text_file(config), config);
  EXPECT_TRUE(cfg.gemma && cfg.qk_norm && !cfg.qkv_bias);
  EXPECT_EQ(cfg.sliding_layers, (std::vector<bool>{true, false, true, false}));
  EXPECT_EQ(cfg.sliding_window, 4);
  EXPECT_EQ(cfg.rope_linear_factor, 8);
  EXPECT_EQ(cfg.sliding_rope_theta, 10000);
  expect_hidden_states_of("gemma3_tiny");
  // transformers 4's way of writing the settings: rope_theta, rope_local_base_freq, rope_scaling, a pattern.
  auto old = nlohmann::json::parse(plan::read_text_file(config));
  old.erase("rope_parameters");
  old.erase("layer_types");
  old["rope_theta"] = 5e5, old["rope_local_base_freq"] = 20000.0, old["sliding_window_pattern"] = 2;
  old["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 4.0}};
  const auto read = plan::parse_llm_text_config(old.dump(), "config.json");
  EXPECT_EQ(read.sliding_layers, cfg.sliding_layers);
  EXPECT_EQ(read.rope_theta, 5e5);
  EXPECT_EQ(read.rope_linear_factor, 4);
  EXPECT_EQ(read.sliding_rope_theta, 20000);
  // A whole model's config as the Hub's gemma-3-4b-it has it (transformers 4.50): text_config holds only what
  // differs from Gemma3TextConfig's defaults, which fill the rest.
  const auto whole = plan::parse_llm_text_config(R"({"model_type": "gemma3", "text_config": {"hidden_size": 2560,
      "intermediate_size": 10240, "model_type": "gemma3_text", "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0,
      "rope_type": "linear"}, "sliding_window": 1024}, "vision_config": {"model_type": "siglip_vision_model"}})",
                                                 "config.json");
  EXPECT_TRUE(whole.gemma);
  EXPECT_EQ(whole.num_attention_heads, 8);
  EXPECT_EQ(whole.num_key_value_heads, 4);
  EXPECT_EQ(whole.head_dim(), 256);
  EXPECT_EQ(whole.vocab_size, 262208);
  EXPECT_EQ(whole.query_pre_attn_scalar, 256);
  EXPECT_EQ(whole.sliding_window, 1024);
  EXPECT_EQ(whole.rope_theta, 1e6);
  EXPECT_EQ(whole.rope_linear_factor, 8);
  ASSERT_EQ(whole.sliding_layers.size(), 34u);
  EXPECT_TRUE(whole.sliding_layers[0] && !whole.sliding_layers[5] && whole.sliding_layers[6] && !whole.sliding_layers[11]);
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
  // Gemma 2's soft-capping and another activation are named, not run as Gemma 3's.
  auto gemma = nlohmann::json::parse(
      plan::read_text_file(std::string(test::source_dir()) + "/tests/data/gemma3_tiny/config.json"));
  gemma["attn_logit_softcapping"] = 50.0;
  EXPECT_TRUE(test::throws_with<InputError>([&] { plan::parse_llm_text_config(gemma.dump(), "config.json"); },
                                            {"'attn_logit_softcapping'", "50", "Gemma 2"}));
  gemma.erase("attn_logit_softcapping");
  gemma["hidden_activation"] = "gelu";
  EXPECT_TRUE(test::throws_with<InputError>([&] { plan::parse_llm_text_config(gemma.dump(), "config.json"); },
                                            {"'hidden_activation'", "gelu_pytorch_tanh"}));
  // A language model too shallow for the hidden state HunyuanVideo-1.5 reads, named when the folder is read.
  test::copy_tree(test::golden_case("hunyuan15_tiny"), tmp.path("hy"));
  test::edit_json(tmp.path("hy") + "/text_encoder/config.json", [](nlohmann::json& j) { j["num_hidden_layers"] = 1; });
  EXPECT_TRUE(test::throws_with<InputError>([&] { plan::read_model_folder(tmp.path("hy")); },
                                            {"text_encoder/config.json", "num_hidden_layers 1", "hidden_states[-3]", "at least 2 layers"}));
}

}  // namespace

// The language-model text encoder beyond HunyuanVideo-1.5's Qwen2.5-VL (test_hunyuan15_text): Qwen3 and Gemma 3's
// language model against transformers 5.24 on tiny models of tests/data (every hidden state of rows padded on
// either side), their configs as transformers 4 and 5 write them, and Gemma's tokenizer against tokenizers on a small
// tokenizer.json laid out as Gemma 3's.
#include <fstream>

#include <ATen/ops/nonzero.h>

#include "io/weights/tensor_file.h"
#include "plan/error.h"
#include "plan/llm_config.h"
#include "plan/model_folder.h"
#include "tensor_support.h"
#include "text/encode/llm_encoder.h"
#include "text/tokenize/gemma_tokenizer.h"

using namespace studio;

namespace {

std::string data(const std::string& name) { return std::string(test::source_dir()) + "/tests/data/" + name; }

// A tiny model of tests/data/NAME (made by its make_NAME.py with transformers) against transformers' every hidden
// state of three rows: whole, padded on the right, padded on the left (compared where they have tokens).
void expect_hidden_states_of(const std::string& name) {
  const std::string dir = data(name);
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
  const std::string config = data("qwen3_tiny/config.json");
  const auto cfg = plan::parse_llm_text_config(plan::read_text_file(config), config);
  EXPECT_EQ(cfg.head_dim(), 16);
  EXPECT_TRUE(cfg.qk_norm && cfg.qkv_bias && cfg.o_bias && !cfg.gemma);
  expect_hidden_states_of("qwen3_tiny");
}

// Gemma 3's language model against transformers' Gemma3TextModel: scaled embeddings, 1 + weight norms, four norms
// a layer, q/k norms, tanh-GELU, scores scaled by query_pre_attn_scalar (24, not head_dim 16), local layers over a
// sliding window of 4 of the 9 tokens with RoPE at base 10000, global ones at 1e6 scaled linearly by 8.
TEST(LlmEncoder, gemma3_hidden_states_equal_transformers) {
  const std::string config = data("gemma3_tiny/config.json");
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

// Gemma 2's soft-capping and another activation are named, not run as Gemma 3's.
TEST(LlmRefusals, what_gemma_3_does_not_have_is_named) {
  auto gemma = nlohmann::json::parse(plan::read_text_file(data("gemma3_tiny/config.json")));
  gemma["attn_logit_softcapping"] = 50.0;
  EXPECT_TRUE(test::throws_with<InputError>([&] { plan::parse_llm_text_config(gemma.dump(), "config.json"); },
                                            {"'attn_logit_softcapping'", "50", "Gemma 2"}));
  gemma.erase("attn_logit_softcapping");
  gemma["hidden_activation"] = "gelu";
  EXPECT_TRUE(test::throws_with<InputError>([&] { plan::parse_llm_text_config(gemma.dump(), "config.json"); },
                                            {"'hidden_activation'", "gelu_pytorch_tanh"}));
}

// Gemma's tokenizer against tokenizers (tests/data/gemma3_tokenizer/make_gemma3_tokenizer.py): words merged by BPE
// over spaces written "▁", runs of spaces, the chat markers as added tokens, characters the vocabulary lacks as their
// bytes, <bos> first; and, without the byte token <0xF0>, each run of emoji one <unk>.
TEST(GemmaTokenizer, ids_equal_tokenizers) {
  const auto expected = nlohmann::json::parse(std::ifstream(data("gemma3_tokenizer/expected.json")));
  const auto tokenizer = text::GemmaTokenizer::load(data("gemma3_tokenizer"));
  for (const auto& c : expected["cases"])
    EXPECT_EQ(tokenizer.tokenize(c["text"]), c["ids"].get<std::vector<int64_t>>()) << c["text"];
  test::TempDir tmp;
  auto file = nlohmann::json::parse(plan::read_text_file(data("gemma3_tokenizer/tokenizer.json")));
  file["model"]["vocab"].erase("<0xF0>");
  test::write_file(tmp.path("tokenizer.json"), file.dump());
  const auto without = text::GemmaTokenizer::load(tmp.path(""));
  for (const auto& c : expected["without_0xF0"])
    EXPECT_EQ(without.tokenize(c["text"]), c["ids"].get<std::vector<int64_t>>()) << c["text"];
  // Another tokenizer's file is named, with what differs.
  file["normalizer"] = nullptr;
  test::write_file(tmp.path("tokenizer.json"), file.dump());
  EXPECT_TRUE(test::throws_with<InputError>([&] { text::GemmaTokenizer::load(tmp.path("")); },
                                            {"tokenizer.json", "normalizer", "Gemma 3's tokenizer/"}));
}

}  // namespace

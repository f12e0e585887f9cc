// The T5 tokenizer and encoder against the reference (t5_tiny): ids exactly, every float to 1e-4;
// and bad tokenizer / encoder folders refused with a message.
#include <ATen/ops/from_blob.h>
#include <ATen/ops/stack.h>

#include <algorithm>
#include <cstring>

#include "plan/error.h"
#include "tensor_support.h"
#include "text/tokenize/sentencepiece/charsmap_check.h"
#include "text/encode/t5_encoder.h"
#include "text/tokenize/t5_tokenizer.h"

using namespace studio;

namespace {

std::vector<int64_t> row(const at::Tensor& t, int64_t i) {
  auto r = t[i].contiguous();
  return std::vector<int64_t>(r.data_ptr<int64_t>(), r.data_ptr<int64_t>() + r.numel());
}

class T5 : public ::testing::Test {
 protected:
  const std::string dir_ = test::golden_case("t5_tiny");
  test::TempDir tmp_;
  io::TensorFile golden() { return io::TensorFile(dir_ + "/golden.safetensors", "golden"); }
  std::shared_ptr<text::T5Encoder> encoder() {
    const std::string cfg = dir_ + "/text_encoder/config.json";
    return text::T5Encoder::load(dir_ + "/text_encoder", plan::parse_t5_config(plan::read_text_file(cfg), cfg),
                                 at::kFloat, at::kCPU);
  }
};

TEST_F(T5, token_ids_match_exactly) {
  auto tok = text::T5Tokenizer::load(dir_ + "/tokenizer");
  auto g = test::golden_json("t5_tiny");
  auto f = golden();
  const auto ids = f.get_int64("input_ids"), mask = f.get_int64("attention_mask"), full = f.get_int64("untruncated_ids");
  for (int64_t i = 0; i < 3; ++i) {
    const std::string prompt = g["prompts"][size_t(i)];
    auto e = tok.encode(prompt, 16);
    EXPECT_EQ(e.ids, row(ids, i)) << prompt;
    EXPECT_EQ(e.mask, row(mask, i)) << prompt;
    // The whole tokenization: the untruncated row up to its </s>.
    auto all = tok.tokenize(prompt);
    all.push_back(tok.eos_id());
    auto want = row(full, i);
    want.resize(all.size());
    EXPECT_EQ(all, want) << prompt;
  }
  EXPECT_EQ(tok.encode("", 16).ids, row(f.get_int64("negative_input_ids"), 0));
}

TEST_F(T5, added_tokens_are_kept_whole) {
  auto tok = text::T5Tokenizer::load(dir_ + "/tokenizer");
  auto ids = tok.tokenize("a <extra_id_0> b</s>");
  EXPECT_NE(std::find(ids.begin(), ids.end(), 499), ids.end());  // <extra_id_0>
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.back(), int64_t(1));  // </s>
}

TEST_F(T5, encoder_matches_reference) {
  auto enc = encoder();
  auto f = golden();
  auto ids = f.get_int64("input_ids");
  const double emb = test::max_abs_diff(enc->embed(ids), f.get("embeddings", 3, ""));
  const double bias = test::max_abs_diff(enc->position_bias(16), f.get("position_bias", 4, ""));
  std::vector<at::Tensor> blocks;
  auto out = enc->forward(ids, &blocks);
  const double blk = test::max_abs_diff(at::stack(blocks), f.get("block_outputs", 4, ""));
  const double last = test::max_abs_diff(out, f.get("last_hidden_state", 3, ""));
  const double neg =
      test::max_abs_diff(enc->forward(f.get_int64("negative_input_ids")), f.get("negative_prompt_embeds", 3, ""));
  std::printf("max errors: embeddings %.2g, position bias %.2g, blocks %.2g, last hidden %.2g, negative %.2g\n", emb,
              bias, blk, last, neg);
  EXPECT_LT(emb, test::kCallTolerance);
  EXPECT_LT(bias, test::kCallTolerance);
  EXPECT_LT(blk, test::kCallTolerance);
  EXPECT_LT(last, test::kCallTolerance);
  EXPECT_LT(neg, test::kCallTolerance);
}

TEST_F(T5, bad_tokenizer_folders) {
  const std::string empty = tmp_.path("empty");
  std::filesystem::create_directories(empty);
  EXPECT_TRUE(test::throws_with<InputError>([&] { text::T5Tokenizer::load(empty); },
                                            {"no spiece.model", "--prompt_embeds"}));
  const std::string junk = tmp_.path("junk");
  std::filesystem::create_directories(junk);
  test::write_file(junk + "/spiece.model", "not a model");
  EXPECT_TRUE(test::throws_with<InputError>([&] { text::T5Tokenizer::load(junk); },
                                            {"spiece.model", "not a sentencepiece model"}));
  // A real model cut short, and a tokenizer_config.json whose added tokens are malformed.
  const std::string real = test::read_file(test::golden_case("t5_tiny") + "/tokenizer/spiece.model");
  test::write_file(junk + "/spiece.model", real.substr(0, real.size() / 2));
  EXPECT_TRUE(test::throws_with<InputError>([&] { text::T5Tokenizer::load(junk); },
                                            {"spiece.model", "not a sentencepiece model"}));
  test::write_file(junk + "/spiece.model", real);
  test::write_file(junk + "/tokenizer_config.json", R"({"added_tokens_decoder": {"99999999999999999999": {"content": 5}}})");
  EXPECT_TRUE(test::throws_with<InputError>([&] { text::T5Tokenizer::load(junk); },
                                            {"tokenizer_config.json", "malformed"}));
}

// A character map whose trie walks outside itself crashed sentencepiece on the first prompt (found by
// fuzzing): it is refused when the folder is loaded, with the reason.
TEST_F(T5, damaged_character_map_is_refused) {
  const std::string real = test::read_file(dir_ + "/tokenizer/spiece.model");
  EXPECT_EQ(text::model_charsmap_problem(real), "");
  const std::string_view map = text::proto_bytes_field(text::proto_bytes_field(real, 3), 2);
  ASSERT_GT(map.size(), 1024u);
  std::string damaged = real;
  const uint32_t far_root = 0xFFFFFC00u;  // the root's children block, far past the end
  std::memcpy(&damaged[size_t(map.data() - real.data()) + 4], &far_root, sizeof far_root);
  const std::string dir = tmp_.path("damaged");
  std::filesystem::create_directories(dir);
  test::write_file(dir + "/spiece.model", damaged);
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] { text::T5Tokenizer::load(dir); },
      {"spiece.model", "normaliser's character map is damaged", "outside the trie"}));

  // Hand-made maps: one block of 256 units whose root loops to itself, with strings "ab\0".
  const auto make_map = [](uint32_t trie_bytes, uint32_t unit_0x61, const std::string& strings) {
    std::string blob(4 + 1024, '\0');
    std::memcpy(&blob[0], &trie_bytes, 4);
    std::memcpy(&blob[4 + 4 * 0x61], &unit_0x61, 4);
    return blob + strings;
  };
  const std::string ab("ab\0", 3);
  EXPECT_EQ(text::charsmap_problem(make_map(1024, 0, ab)), "");
  EXPECT_EQ(text::charsmap_problem(""), "");
  EXPECT_NE(text::charsmap_problem(make_map(4096, 0, ab)).find("runs past the map"), std::string::npos);
  EXPECT_NE(text::charsmap_problem(make_map(0, 0, ab)).find("trie is empty"), std::string::npos);
  // 'a' matches and has a leaf (bit 8) whose value, read from the same unit, is 0x161: past "ab".
  const uint32_t leaf_a = 0x61 | (1u << 8);
  EXPECT_NE(text::charsmap_problem(make_map(1024, leaf_a, ab)).find("a replacement starts at byte 353"),
            std::string::npos);
  EXPECT_NE(text::charsmap_problem(make_map(1024, leaf_a, std::string(400, 'x'))).find("has no end"),
            std::string::npos);
  EXPECT_EQ(text::charsmap_problem(make_map(1024, leaf_a, std::string(353, 'x') + ab)), "");
}

// sentencepiece's trie throws from deep inside on a piece that starts with a NUL byte (found by fuzzing):
// a refusal, not an exception escaping the module. The model is written field by field: pieces <unk>,
// "a" and "b", then "\0b" in place of "b".
TEST_F(T5, model_with_a_nul_piece_is_refused) {
  const auto piece = [](const std::string& text, char type) {
    const std::string body = std::string{0x0A, char(text.size())} + text + std::string{0x15, 0, 0, 0, 0, 0x18, type};
    return std::string{0x0A, char(body.size())} + body;
  };
  const std::string dir = tmp_.path("nul_piece");
  std::filesystem::create_directories(dir);
  test::write_file(dir + "/spiece.model", piece("<unk>", 2) + piece("a", 1) + piece("b", 1));
  EXPECT_EQ(text::T5Tokenizer::load(dir).tokenize("ab").size(), 3u);  // the hand-made model itself is sound
  test::write_file(dir + "/spiece.model", piece("<unk>", 2) + piece("a", 1) + piece(std::string("\0b", 2), 1));
  EXPECT_TRUE(test::throws_with<InputError>([&] { text::T5Tokenizer::load(dir); },
                                            {"spiece.model", "not a sentencepiece model", "zero-length key"}));
}

TEST_F(T5, bad_encoder_folders) {
  const std::string dir = tmp_.path("enc");
  test::copy_tree(dir_ + "/text_encoder", dir);
  test::edit_json(dir + "/config.json", [](nlohmann::json& j) { j["num_layers"] = 3; });
  const std::string cfg = dir + "/config.json";
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] { text::T5Encoder::load(dir, plan::parse_t5_config(plan::read_text_file(cfg), cfg), at::kFloat, at::kCPU); },
      {"missing weight 'encoder.block.2."}));
  test::edit_json(cfg, [](nlohmann::json& j) { j["feed_forward_proj"] = "relu"; });
  EXPECT_TRUE(test::throws_with<InputError>([&] { plan::parse_t5_config(plan::read_text_file(cfg), cfg); },
                                            {"'feed_forward_proj'", "\"relu\"", "gated-gelu"}));
}

}  // namespace

// The T5 tokenizer and encoder against the reference (t5_tiny): ids exactly, every float to 1e-4;
// and bad tokenizer / encoder folders refused with a message.
#include <QTemporaryDir>
#include <QtTest>

#include <ATen/ops/from_blob.h>
#include <ATen/ops/stack.h>

#include "plan/error.h"
#include "tensor_support.h"
#include "text/t5_encoder.h"
#include "text/t5_tokenizer.h"

using namespace studio;

namespace {

at::Tensor ids_tensor(const std::vector<int64_t>& ids) {
  return at::from_blob(const_cast<int64_t*>(ids.data()), {int64_t(ids.size())}, at::kLong).clone();
}

std::vector<int64_t> row(const at::Tensor& t, int64_t i) {
  auto r = t[i].contiguous();
  return std::vector<int64_t>(r.data_ptr<int64_t>(), r.data_ptr<int64_t>() + r.numel());
}

}  // namespace

class TestT5 : public QObject {
  Q_OBJECT
  const std::string dir_ = test::golden_case("t5_tiny");
  io::TensorFile golden() { return io::TensorFile(dir_ + "/golden.safetensors", "golden"); }
  std::shared_ptr<text::T5Encoder> encoder() {
    const std::string cfg = dir_ + "/text_encoder/config.json";
    return text::T5Encoder::load(dir_ + "/text_encoder", plan::parse_t5_config(plan::read_text_file(cfg), cfg),
                                 at::kFloat, at::kCPU);
  }
  QTemporaryDir tmp_;

 private Q_SLOTS:
  void token_ids_match_exactly() {
    auto tok = text::T5Tokenizer::load(dir_ + "/tokenizer");
    auto g = test::golden_json("t5_tiny");
    auto f = golden();
    const auto ids = f.get_int64("input_ids"), mask = f.get_int64("attention_mask"), full = f.get_int64("untruncated_ids");
    for (int64_t i = 0; i < 3; ++i) {
      const std::string prompt = g["prompts"][size_t(i)];
      auto e = tok.encode(prompt, 16);
      QCOMPARE(e.ids, row(ids, i));
      QCOMPARE(e.mask, row(mask, i));
      // The whole tokenization: the untruncated row up to its </s>.
      auto all = tok.tokenize(prompt);
      all.push_back(tok.eos_id());
      auto want = row(full, i);
      want.resize(all.size());
      QCOMPARE(all, want);
    }
    QCOMPARE(tok.encode("", 16).ids, row(f.get_int64("negative_input_ids"), 0));
  }

  void added_tokens_are_kept_whole() {
    auto tok = text::T5Tokenizer::load(dir_ + "/tokenizer");
    auto ids = tok.tokenize("a <extra_id_0> b</s>");
    QVERIFY(std::find(ids.begin(), ids.end(), 499) != ids.end());  // <extra_id_0>
    QCOMPARE(ids.back(), int64_t(1));                              // </s>
  }

  void encoder_matches_reference() {
    auto enc = encoder();
    auto f = golden();
    auto ids = f.get_int64("input_ids");
    const double emb = test::max_abs_diff(enc->embed(ids), f.get("embeddings", 3, ""));
    const double bias = test::max_abs_diff(enc->position_bias(16), f.get("position_bias", 4, ""));
    std::vector<at::Tensor> blocks;
    auto out = enc->forward(ids, &blocks);
    const double blk = test::max_abs_diff(at::stack(blocks), f.get("block_outputs", 4, ""));
    const double last = test::max_abs_diff(out, f.get("last_hidden_state", 3, ""));
    const double neg = test::max_abs_diff(enc->forward(f.get_int64("negative_input_ids")),
                                          f.get("negative_prompt_embeds", 3, ""));
    qInfo("max errors: embeddings %.2g, position bias %.2g, blocks %.2g, last hidden %.2g, negative %.2g", emb, bias,
          blk, last, neg);
    QVERIFY(emb < 1e-4 && bias < 1e-4 && blk < 1e-4 && last < 1e-4 && neg < 1e-4);
  }

  void bad_tokenizer_folders() {
    const std::string empty = tmp_.path().toStdString() + "/empty";
    std::filesystem::create_directories(empty);
    QVERIFY(test::throws_with<InputError>([&] { text::T5Tokenizer::load(empty); },
                                          {"no spiece.model", "--prompt_embeds"}));
    const std::string junk = tmp_.path().toStdString() + "/junk";
    std::filesystem::create_directories(junk);
    test::write_file(junk + "/spiece.model", "not a model");
    QVERIFY(test::throws_with<InputError>([&] { text::T5Tokenizer::load(junk); },
                                          {"spiece.model", "not a sentencepiece model"}));
  }

  void bad_encoder_folders() {
    const std::string dir = tmp_.path().toStdString() + "/enc";
    test::copy_tree(dir_ + "/text_encoder", dir);
    test::edit_json(dir + "/config.json", [](nlohmann::json& j) { j["num_layers"] = 3; });
    const std::string cfg = dir + "/config.json";
    QVERIFY(test::throws_with<InputError>(
        [&] { text::T5Encoder::load(dir, plan::parse_t5_config(plan::read_text_file(cfg), cfg), at::kFloat, at::kCPU); },
        {"missing weight 'encoder.block.2."}));
    test::edit_json(cfg, [](nlohmann::json& j) { j["feed_forward_proj"] = "relu"; });
    QVERIFY(test::throws_with<InputError>([&] { plan::parse_t5_config(plan::read_text_file(cfg), cfg); },
                                          {"'feed_forward_proj'", "\"relu\"", "gated-gelu"}));
  }
};

QTEST_APPLESS_MAIN(TestT5)
#include "test_t5.moc"

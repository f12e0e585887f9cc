// Trains the built-in demo model's tokenizer: a small T5-style sentencepiece unigram model (<pad> 0,
// </s> 1, <unk> 2, no bos, nmt_nfkc) on a few paragraphs written here, plus the tokenizer config
// transformers writes. A program of its own: sentencepiece's trainer must not share a process with
// LibTorch (their protobufs clash; see engine/text/tokenize/sentencepiece/sentencepiece_module.cpp).
// Usage: dit-make-demo-tokenizer OUT_DIR/tokenizer
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <filesystem>
#include <fstream>
#include <iostream>

namespace fs = std::filesystem;

namespace {

const char* kCorpus[] = {
    "A cat sits on a red mat in the warm afternoon light.",
    "A small wooden boat drifts slowly across a calm mountain lake at sunrise.",
    "Birds fly over the pine trees while mist rises from the water.",
    "A paper boat floats on a pond, turning gently in the wind.",
    "Colourful shapes swirl and fold into each other like ink in water.",
    "A city street at night, with rain on the road and neon signs reflected in puddles.",
    "A dog runs along the beach, chasing the waves as they roll onto the sand.",
    "Clouds move quickly over green hills under a bright blue sky.",
    "A candle flickers on a wooden table beside an open book.",
    "Snow falls softly on a quiet village with lights in every window.",
    "An astronaut walks slowly across the grey surface of the moon.",
    "A field of sunflowers sways in the summer breeze.",
    "Waves crash against the rocks below a white lighthouse.",
    "A red balloon rises into the sky above the rooftops.",
    "Fish swim between the corals of a bright reef.",
    "A train crosses a long bridge over a deep valley in autumn.",
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: dit-make-demo-tokenizer OUT_DIR\n";
    return 2;
  }
  const fs::path out(argv[1]);
  fs::create_directories(out);
  {
    std::ofstream c(out / "corpus.txt");
    for (int repeat = 0; repeat < 4; ++repeat)
      for (const char* line : kCorpus) c << line << "\n";
  }
  // Relative names, from inside the folder: the trainer writes its arguments into the model, which is
  // installed, and a package must not carry the paths of the machine that built it.
  fs::current_path(out);
  const std::string args = "--input=corpus.txt --model_prefix=spiece"
                           " --model_type=unigram --vocab_size=250 --hard_vocab_limit=false --pad_id=0 --eos_id=1"
                           " --unk_id=2 --bos_id=-1 --normalization_rule_name=nmt_nfkc --byte_fallback=false"
                           " --num_threads=1 --minloglevel=2";
  sentencepiece::SetRandomGeneratorSeed(1);  // the same demo model on every build
  const auto status = sentencepiece::SentencePieceTrainer::Train(args);
  fs::remove("corpus.txt");
  fs::remove("spiece.vocab");
  if (!status.ok()) {
    std::cerr << "dit-make-demo-tokenizer: " << status.ToString() << "\n";
    return 1;
  }
  std::ofstream("tokenizer_config.json")
      << R"({"tokenizer_class": "T5Tokenizer", "legacy": true, "model_max_length": 16, "eos_token": "</s>",)"
      << R"( "pad_token": "<pad>", "unk_token": "<unk>", "extra_ids": 0})" << "\n";
  return 0;
}

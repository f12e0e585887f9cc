// libFuzzer target: the T5 tokenizer's loader on arbitrary files: spiece.model, tokenizer_config.json and a
// prompt, separated by lines "--8<--". Built without the address sanitizer: sentencepiece lives in a module
// loaded with RTLD_DEEPBIND (text/tokenize/sentencepiece/sentencepiece_module.cpp), which the sanitizers' runtime refuses; a
// crash, a hang or unbounded memory still fails the run. Whatever arrives, the loader returns or throws
// InputError.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "plan/error.h"
#include "text/tokenize/t5_tokenizer.h"

using namespace studio;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/fuzz-t5-XXXXXX";
    if (!mkdtemp(tmpl)) std::abort();
    return std::string(tmpl);
  }();
  const std::string bytes(reinterpret_cast<const char*>(data), size), cut = "\n--8<--\n";
  const size_t a = bytes.find(cut), b = a == std::string::npos ? a : bytes.find(cut, a + cut.size());
  if (b == std::string::npos) return 0;
  std::ofstream(dir + "/spiece.model", std::ios::binary | std::ios::trunc) << bytes.substr(0, a);
  std::ofstream(dir + "/tokenizer_config.json", std::ios::binary | std::ios::trunc)
      << bytes.substr(a + cut.size(), b - a - cut.size());
  try {
    const auto tokenizer = text::T5Tokenizer::load(dir);
    const auto e = tokenizer.encode(bytes.substr(b + cut.size()), 16);
    if (e.ids.size() != 16) std::abort();
  } catch (const InputError&) {
  }
  return 0;
}

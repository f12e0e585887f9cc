// A C interface over sentencepiece, built as its own module and loaded with RTLD_LOCAL | RTLD_DEEPBIND
// (see t5_tokenizer.cpp): Debian's libsentencepiece carries its own copy of protobuf, whose symbols
// clash with the libprotobuf that LibTorch loads; isolated like this, both live in one process.
#include <sentencepiece_processor.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "text/tokenize/sentencepiece/charsmap_check.h"

namespace {

void set_error(char* err, size_t len, const std::string& msg) {
  if (err && len) {
    std::strncpy(err, msg.c_str(), len - 1);
    err[len - 1] = '\0';
  }
}

}  // namespace

extern "C" {

void* studio_sp_load(const char* model_path, char* err, size_t err_len) {
  auto* sp = new sentencepiece::SentencePieceProcessor();
  try {  // sentencepiece throws from inside (darts-clone, on a piece it cannot index); no C++ crosses out
    const auto status = sp->Load(model_path);
    // sentencepiece trusts the normaliser's trie it just read; a damaged one would crash the first encode.
    const std::string problem = status.ok() ? studio::text::model_charsmap_problem(sp->serialized_model_proto())
                                            : status.ToString();
    if (problem.empty()) return sp;
    set_error(err, err_len, problem);
  } catch (const std::exception& e) {
    set_error(err, err_len, e.what());
  }
  delete sp;
  return nullptr;
}

// ids: malloc'd, freed with studio_sp_free; returns 0 on success.
int studio_sp_encode(void* h, const char* text, size_t len, int32_t** ids, size_t* n, char* err, size_t err_len) {
  std::vector<int> out;
  try {
    const auto status = static_cast<sentencepiece::SentencePieceProcessor*>(h)->Encode(std::string(text, len), &out);
    if (!status.ok()) {
      set_error(err, err_len, status.ToString());
      return 1;
    }
  } catch (const std::exception& e) {
    set_error(err, err_len, e.what());
    return 1;
  }
  *n = out.size();
  *ids = static_cast<int32_t*>(std::malloc(sizeof(int32_t) * (out.empty() ? 1 : out.size())));
  for (size_t i = 0; i < out.size(); ++i) (*ids)[i] = out[i];
  return 0;
}

void studio_sp_free(int32_t* ids) { std::free(ids); }

// which: 0 eos, 1 pad, 2 unk; -1 when the model has none.
int studio_sp_special(void* h, int which) {
  auto* sp = static_cast<sentencepiece::SentencePieceProcessor*>(h);
  return which == 0 ? sp->eos_id() : which == 1 ? sp->pad_id() : sp->unk_id();
}

void studio_sp_close(void* h) { delete static_cast<sentencepiece::SentencePieceProcessor*>(h); }
}

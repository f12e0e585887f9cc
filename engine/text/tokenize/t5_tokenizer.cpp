#include "text/tokenize/t5_tokenizer.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "plan/error.h"
#include "plan/model_folder.h"

namespace fs = std::filesystem;

namespace studio::text {

namespace {

constexpr const char* kSpace = " \t\n\r\f\v";

std::string rstrip(const std::string& s) {
  auto e = s.find_last_not_of(kSpace);
  return e == std::string::npos ? "" : s.substr(0, e + 1);
}
std::string lstrip(const std::string& s) {
  auto b = s.find_first_not_of(kSpace);
  return b == std::string::npos ? "" : s.substr(b);
}

// The sentencepiece module's C interface, loaded once per process.
struct Api {
  void* (*load)(const char*, char*, size_t);
  int (*encode)(void*, const char*, size_t, int32_t**, size_t*, char*, size_t);
  void (*free_ids)(int32_t*);
  int (*special)(void*, int);
  void (*close)(void*);
};

std::string module_path() {
  if (const char* dir = std::getenv("STUDIO_LIB_DIR")) return std::string(dir) + "/libstudio_sentencepiece.so";
  char exe[PATH_MAX] = {0};
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  const fs::path bin = fs::path(n > 0 ? std::string(exe, size_t(n)) : ".").parent_path();
  return (bin / STUDIO_PRIVATE_LIB_FROM_BIN / "libstudio_sentencepiece.so").lexically_normal().string();
}

const Api& api() {
  static const Api a = [] {
    const std::string path = module_path();
    // Local and deep-bound: sentencepiece's protobuf must not meet LibTorch's.
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!h) throw InputError("cannot load the tokenizer module " + path + " (" + dlerror() + "); reinstall DiT Studio");
    Api r{};
    r.load = reinterpret_cast<decltype(r.load)>(dlsym(h, "studio_sp_load"));
    r.encode = reinterpret_cast<decltype(r.encode)>(dlsym(h, "studio_sp_encode"));
    r.free_ids = reinterpret_cast<decltype(r.free_ids)>(dlsym(h, "studio_sp_free"));
    r.special = reinterpret_cast<decltype(r.special)>(dlsym(h, "studio_sp_special"));
    r.close = reinterpret_cast<decltype(r.close)>(dlsym(h, "studio_sp_close"));
    if (!r.load || !r.encode || !r.free_ids || !r.special || !r.close)
      throw InputError(path + ": not DiT Studio's tokenizer module; reinstall DiT Studio");
    return r;
  }();
  return a;
}

}  // namespace

struct T5Tokenizer::Module {
  void* handle = nullptr;
  ~Module() {
    if (handle) api().close(handle);
  }
};

T5Tokenizer::T5Tokenizer() : sp_(std::make_unique<Module>()) {}
T5Tokenizer::~T5Tokenizer() = default;
T5Tokenizer::T5Tokenizer(T5Tokenizer&&) noexcept = default;

T5Tokenizer T5Tokenizer::load(const std::string& dir) {
  T5Tokenizer t;
  const std::string model = (fs::path(dir) / "spiece.model").string();
  if (!fs::exists(model))
    throw InputError(dir + ": no spiece.model; a T5 tokenizer folder holds the sentencepiece model "
                     "(download the whole model folder, or pass --prompt_embeds)");
  char err[512] = {0};
  t.sp_->handle = api().load(model.c_str(), err, sizeof err);
  if (!t.sp_->handle) throw InputError(model + ": not a sentencepiece model (" + err + ")");
  const int eos = api().special(t.sp_->handle, 0), pad = api().special(t.sp_->handle, 1);
  t.eos_ = eos >= 0 ? eos : 1;
  t.pad_ = pad >= 0 ? pad : 0;

  // Added tokens: tokenizer_config.json's added_tokens_decoder (with lstrip/rstrip), else added_tokens.json.
  const fs::path cfg = fs::path(dir) / "tokenizer_config.json", added = fs::path(dir) / "added_tokens.json";
  try {
    if (fs::exists(cfg)) {
      auto j = nlohmann::json::parse(plan::read_text_file(cfg.string()));
      if (j.contains("added_tokens_decoder"))
        for (auto it = j["added_tokens_decoder"].begin(); it != j["added_tokens_decoder"].end(); ++it)
          t.added_.push_back({it->at("content").get<std::string>(), std::stoll(it.key()),
                              it->value("lstrip", false), it->value("rstrip", false)});
    }
    if (t.added_.empty() && fs::exists(added)) {
      auto j = nlohmann::json::parse(plan::read_text_file(added.string()));
      for (auto it = j.begin(); it != j.end(); ++it) t.added_.push_back({it.key(), it->get<int64_t>(), false, false});
    }
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(dir + ": tokenizer_config.json or added_tokens.json is malformed (" + e.what() + ")");
  }
  std::sort(t.added_.begin(), t.added_.end(),
            [](const Added& a, const Added& b) { return a.content.size() > b.content.size(); });
  return t;
}

std::vector<int64_t> T5Tokenizer::tokenize(const std::string& text) const {
  // Split on added tokens, the leftmost-longest match first, as transformers' trie does.
  struct Piece {
    std::string text;
    const Added* token = nullptr;
  };
  std::vector<Piece> pieces;
  std::string chunk;
  for (size_t i = 0; i < text.size();) {
    const Added* hit = nullptr;
    for (const auto& a : added_)
      if (!a.content.empty() && text.compare(i, a.content.size(), a.content) == 0) {
        hit = &a;
        break;
      }
    if (!hit) {
      chunk += text[i++];
      continue;
    }
    pieces.push_back({chunk});
    pieces.push_back({hit->content, hit});
    chunk.clear();
    i += hit->content.size();
  }
  pieces.push_back({chunk});
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (!pieces[i].token) continue;
    if (pieces[i].token->lstrip && i > 0 && !pieces[i - 1].token) pieces[i - 1].text = rstrip(pieces[i - 1].text);
    if (pieces[i].token->rstrip && i + 1 < pieces.size() && !pieces[i + 1].token)
      pieces[i + 1].text = lstrip(pieces[i + 1].text);
  }
  std::vector<int64_t> ids;
  for (const auto& p : pieces) {
    if (p.token) {
      ids.push_back(p.token->id);
    } else if (!p.text.empty()) {
      int32_t* sp_ids = nullptr;
      size_t n = 0;
      char err[512] = {0};
      if (api().encode(sp_->handle, p.text.data(), p.text.size(), &sp_ids, &n, err, sizeof err) != 0)
        throw InputError(std::string("tokenizer: cannot encode the prompt (") + err + ")");
      ids.insert(ids.end(), sp_ids, sp_ids + n);
      api().free_ids(sp_ids);
    }
  }
  return ids;
}

T5Tokenizer::Encoded T5Tokenizer::encode(const std::string& text, size_t max_length) const {
  Encoded e;
  e.ids = tokenize(text);
  e.untruncated = e.ids.size();
  if (max_length == 0) return e;
  if (e.ids.size() > max_length - 1) e.ids.resize(max_length - 1);
  e.ids.push_back(eos_);
  e.mask.assign(e.ids.size(), 1);
  e.ids.resize(max_length, pad_);
  e.mask.resize(max_length, 0);
  return e;
}

}  // namespace studio::text

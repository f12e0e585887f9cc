// libFuzzer targets for the loaders of untrusted files, one binary, the target named by $FUZZ_TARGET:
//   safetensors  the bytes as a .safetensors file: opened, every tensor's bytes read
//   gguf         the bytes as a .gguf file: opened, every key's value and every tensor's bytes read
//   configs      the bytes as every config.json a model folder has (each family's parsers)
//   job          the bytes as a job file (the studio's, or a hand-written one for dit-worker), written back
//   clip         the bytes as a CLIP tokenizer folder and a prompt: vocab.json, merges.txt and the text,
//                separated by lines "--8<--"
// Whatever arrives, a loader returns or throws InputError; anything else (another exception, a crash, a
// sanitizer report, a hang, unbounded memory) is a bug.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "io/gguf/gguf_file.h"
#include "io/safetensors/safetensors_file.h"
#include "plan/clip_config.h"
#include "plan/error.h"
#include "plan/families/flux_config.h"
#include "plan/job_file.h"
#include "plan/families/cogvideox_config.h"
#include "text/tokenize/clip_tokenizer.h"

using namespace studio;

namespace {

void safetensors(const std::string& bytes) {
  // An in-memory file, opened by path as a model folder's would be.
  static const int fd = memfd_create("fuzz.safetensors", 0);
  if (ftruncate(fd, 0) != 0 || pwrite(fd, bytes.data(), bytes.size(), 0) != ssize_t(bytes.size())) std::abort();
  const auto file = io::SafetensorsFile::open("/proc/self/fd/" + std::to_string(fd));
  uint64_t sum = 0;
  for (const auto& t : file->tensors()) {
    const uint8_t* p = file->data(t);
    for (uint64_t i = 0; i < t.end - t.begin; ++i) sum += p[i];  // every byte it claims must be readable
  }
  if (sum == 1) std::fputc(0, stderr);  // keeps the reads
}

void gguf(const std::string& bytes) {
  static const int fd = memfd_create("fuzz.gguf", 0);
  if (ftruncate(fd, 0) != 0 || pwrite(fd, bytes.data(), bytes.size(), 0) != ssize_t(bytes.size())) std::abort();
  const auto file = io::GgufFile::open("/proc/self/fd/" + std::to_string(fd));
  uint64_t sum = 0;
  for (const auto& key : file->keys()) {  // the values are read where they lie, when asked for
    if (const auto s = file->string_value(key)) sum += s->size();
    if (const auto i = file->int_value(key)) sum += uint64_t(*i);
    if (const auto a = file->int_array_value(key)) sum += a->size();
  }
  for (const auto& t : file->tensors()) {
    const uint8_t* p = file->data(t);
    for (uint64_t i = 0; i < t.bytes; ++i) sum += p[i];  // every byte it claims must be readable
  }
  if (sum == 1) std::fputc(0, stderr);  // keeps the reads
}

void configs(const std::string& text) {
  auto attempt = [&](auto parse) {
    try {
      parse(text, "config.json");
    } catch (const InputError&) {
    }
  };
  attempt(plan::parse_cogvideox_transformer_config);
  attempt(plan::parse_cogvideox_scheduler_config);
  attempt(plan::parse_cogvideox_vae_config);
  attempt(plan::parse_t5_config);
  attempt(plan::parse_clip_text_config);
  attempt(plan::parse_flux_transformer_config);
  attempt(plan::parse_flow_match_config);
  attempt(plan::parse_autoencoder_kl_config);
}

void job(const std::string& text) {
  const auto f = plan::job_file_from_json(text, "job.json");
  const auto again = plan::job_file_from_json(plan::to_json(f), "job.json");  // what we write, we read
  if (plan::to_json(again) != plan::to_json(f)) std::abort();
}

void clip(const std::string& bytes) {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/fuzz-clip-XXXXXX";
    if (!mkdtemp(tmpl)) std::abort();
    return std::string(tmpl);
  }();
  const std::string cut = "\n--8<--\n";
  const size_t a = bytes.find(cut), b = a == std::string::npos ? a : bytes.find(cut, a + cut.size());
  if (b == std::string::npos) return;
  std::ofstream(dir + "/vocab.json", std::ios::binary | std::ios::trunc) << bytes.substr(0, a);
  std::ofstream(dir + "/merges.txt", std::ios::binary | std::ios::trunc) << bytes.substr(a + cut.size(), b - a - cut.size());
  const auto tokenizer = text::ClipTokenizer::load(dir);
  const auto e = tokenizer.encode(bytes.substr(b + cut.size()));
  if (e.ids.size() != tokenizer.model_max_length()) std::abort();
}

using Target = void (*)(const std::string&);

Target target() {
  const char* name = std::getenv("FUZZ_TARGET");
  const std::string t = name ? name : "";
  if (t == "safetensors") return safetensors;
  if (t == "gguf") return gguf;
  if (t == "configs") return configs;
  if (t == "job") return job;
  if (t == "clip") return clip;
  std::fprintf(stderr, "fuzz-loaders: set FUZZ_TARGET to safetensors, gguf, configs, job or clip\n");
  std::exit(2);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Target run = target();
  try {
    run(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const InputError&) {
  }
  return 0;
}

// A diffusers model folder read from its JSON files alone (no weights, no LibTorch), so the GUI,
// the launcher and the engine share one reading of what a checkpoint is and what it supports. What is
// the same for every family is here; a family's own configs are its row's (plan/families/).
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "plan/t5_config.h"
#include "plan/weight_format.h"

namespace studio::plan {

class Family;

// A family's configs of the folder's parts (transformer, scheduler, VAE, ...), as its row reads them
// (plan/families/<name>_config.h).
struct FamilyParts {
  virtual ~FamilyParts() = default;
};

// Which checkpoint of its family a folder is, as messages and a run's metadata name it.
struct Variant {
  std::string id;    // "wan2.2": short and stable, as known_repos rows and tests name it
  std::string name;  // "Wan2.2 text-to-video with two experts (e.g. Wan2.2-T2V-A14B)"
};

// A LoRA's strength as the layers it sits beside read it at each call (ModelFolder::loras_beside): a new `value`
// changes the next call. `merged`: the load merged some of its changes into weights all the same (a norm's or a
// bias's, which have no layer to sit beside), so a new strength needs the weights loaded again.
struct LiveStrength {
  double value = 1.0;
  bool merged = false;
};
// A change's scale as applied now: times the live strength where there is one.
inline double times_strength(double scale, const LiveStrength* s) { return s ? scale * s->value : scale; }

// A LoRA file and the strength it is applied with (plan/lora_choice.h).
struct LoraUse {
  std::string file;
  double scale = 1.0;
  std::string flag = "--lora";  // the flag that gave it, for messages: "--lora" or "--lora_2"
  std::shared_ptr<LiveStrength> live;  // set where the LoRA sits beside its layers (ModelFolder::loras_beside)
};

struct ModelFolder {
  std::string dir;
  const Family* family = nullptr;  // its row in the registry (plan/families/registry.h)
  Variant variant;
  std::shared_ptr<const FamilyParts> parts;
  std::optional<T5Config> text_encoder;  // the T5 encoder's config, when present
  bool has_tokenizer = false;             // T5's spiece.model
  // A part whose weights come from one file instead of its folder (--transformer FILE), by part name, and the
  // format the transformer's float linear weights are kept in (--quantize fp8) and whether they multiply in
  // float8 (--fp8_gemm): plan::use_job_weights sets them.
  std::map<std::string, std::string> weight_files;
  std::vector<LoraUse> loras, loras_2;  // merged into transformer/'s and transformer_2/'s weights (--lora, --lora_2)
  std::optional<WeightFormat> quantize;
  bool fp8_gemm = false;  // the transformer's linear layers multiply in float8 (--fp8_gemm)
  // The transformer's LoRAs sit beside its linear layers, each reading its LoraUse::live strength, instead of
  // being merged: a worker that keeps the transformer between runs changes a strength without a reload.
  bool loras_beside = false;

  // The family's parts; a logic error if the folder is of another family.
  template <class Parts>
  const Parts& parts_as() const {
    if (const auto* p = dynamic_cast<const Parts*>(parts.get())) return *p;
    throw std::logic_error(dir + ": its parts were asked for as another family's");
  }
  // Where T5 and its tokenizer live (text_encoder/ and tokenizer/, FLUX.1's _2 folders).
  std::string t5_part() const;
  std::string t5_tokenizer_part() const;
  // Whether every encoder that words need is here.
  bool can_encode_words() const;
  bool has_vae() const;
  int vae_scale_spatial() const;
  int vae_scale_temporal() const;
};

// A part of the folder ("vae") or a file in it ("vae", "config.json") as a path.
std::string part_path(const ModelFolder& m, const std::string& part, const std::string& file = "");

// What words need and the folder lacks: "no tokenizer_2/ (spiece.model), no text_encoder/ (CLIP)"; "" if nothing.
std::string missing_text_parts(const ModelFolder& m);
// A Hugging Face repository of the folder's variant, for messages that say how to get a whole folder.
std::string example_repo(const ModelFolder& m);

// Reads and checks model_index.json and each part's config, the family's parts by its row. Throws
// InputError naming the file and field for anything missing, malformed or not supported yet.
ModelFolder read_model_folder(const std::string& dir);

// Reads a whole (small) file; InputError if it cannot be read or is larger than max_bytes.
std::string read_text_file(const std::string& path, size_t max_bytes = 16u << 20);
// Writes a small file whole or not at all (under a temporary name, then renamed); InputError names `what`
// ("the job file") and why it could not be written.
void write_text_file(const std::string& path, const std::string& text, const std::string& what);

}  // namespace studio::plan

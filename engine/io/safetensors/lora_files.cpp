#include "io/safetensors/lora_files.h"

#include <algorithm>
#include <filesystem>

#include "io/safetensors/safetensors_file.h"
#include "plan/error.h"
#include "plan/families/registry.h"
#include "plan/family.h"
#include "plan/lora_choice.h"
#include "plan/single_file.h"

namespace studio::io {

using plan::ends_with;
using plan::starts_with;

namespace {

// A LoRA tensor's module, as Family::names_lora_module reads it: the LoRA suffix and the file's prefix dropped,
// dots and underscores both dots. Empty for a tensor that is no LoRA part.
std::string module_of(const std::string& tensor, bool& is_a) {
  auto [m, piece] = lora_piece(tensor);
  if (piece == LoraPiece::Unknown) return "";
  is_a = piece == LoraPiece::Down;
  for (const char* prefix : {"transformer.", "model.diffusion_model.", "diffusion_model.", "lora_unet_"})
    if (starts_with(m, prefix)) {
      m = m.substr(std::string(prefix).size());
      break;
    }
  for (auto& c : m) c = c == '_' ? '.' : c;
  return m;
}

// The layers whose input is the transformer's width: attention's q (or fused qkv) and FLUX's single linear1.
bool reads_width(const std::string& module) {
  for (const char* tail : {".to.q", ".q", ".qkv", ".linear1"})
    if (ends_with(module, tail)) return true;
  return false;
}

}  // namespace

std::pair<std::string, LoraPiece> lora_piece(const std::string& tensor) {
  static const std::pair<const char*, LoraPiece> suffixes[] = {
      {".lora_A.weight", LoraPiece::Down}, {".lora_down.weight", LoraPiece::Down}, {".lora_B.weight", LoraPiece::Up},
      {".lora_up.weight", LoraPiece::Up},  {".lora_B.bias", LoraPiece::UpBias},    {".alpha", LoraPiece::Alpha},
      {".diff", LoraPiece::Diff},          {".diff_b", LoraPiece::DiffBias},
      {".dora_scale", LoraPiece::DoraScale}};
  for (const auto& [suffix, piece] : suffixes)
    if (ends_with(tensor, suffix)) return {tensor.substr(0, tensor.size() - std::string(suffix).size()), piece};
  return {tensor, LoraPiece::Unknown};
}

LoraFit lora_fit(const std::vector<TensorShape>& tensors) {
  LoraFit fit;
  for (const auto& t : tensors) {
    bool is_a = false;
    const std::string m = module_of(t.name, is_a);
    if (m.empty() && fit.not_lora.empty()) fit.not_lora = t.name;
    if (m.empty()) continue;
    fit.is_lora = true;
    std::vector<std::string> names;
    for (const plan::Family* f : plan::families())
      if (f->names_lora_module(m)) names.push_back(f->name());
    if (names.empty()) continue;
    // The families every block named so far belongs to: a dual-stream block's names are FLUX.1's and
    // HunyuanVideo-1.5's, FLUX.1's single blocks FLUX.1's alone.
    std::vector<std::string> both;
    for (const auto& n : names)
      if (fit.families.empty() || std::find(fit.families.begin(), fit.families.end(), n) != fit.families.end())
        both.push_back(n);
    if (fit.families.empty()) fit.tensor = t.name;
    if (!both.empty()) fit.families = both;
    if (!fit.width && is_a && t.shape.size() == 2 && reads_width(m)) fit.width = t.shape[1], fit.width_tensor = t.name;
  }
  return fit;
}

std::string describe(const LoraFit& fit) {
  std::string out;
  for (size_t i = 0; i < fit.families.size(); ++i) out += (i ? " or " : "") + fit.families[i];
  if (!out.empty() && fit.width) out += ", width " + std::to_string(fit.width);
  return out;
}

std::string lora_mismatch(const LoraFit& fit, const plan::ModelFolder& model, const std::string& file) {
  const plan::Family& family = plan::rules_of(model);
  if (fit.families.empty()) return "";  // names no family's blocks: the loader names what it cannot place
  bool named = false;
  for (const auto& f : fit.families) named = named || f == family.name();
  if (!named)
    return file + ": a LoRA for " + describe(fit) + " (its tensor " + fit.tensor + " is a block of that model); " +
           model.dir + " is " + family.name() + ": choose a LoRA made for " + family.name();
  if (fit.width && fit.width != family.hidden_size(model))
    return file + ": its tensor " + fit.width_tensor + " reads width " + std::to_string(fit.width) + ", and this " +
           family.name() + " transformer is " + std::to_string(family.hidden_size(model)) +
           " wide: the LoRA was made for another size of the model";
  return "";
}

LoraFit lora_fit_of(const std::string& file) {
  std::vector<TensorShape> tensors;
  const auto header = SafetensorsFile::open(file);
  for (const auto& t : header->tensors()) tensors.push_back({t.name, t.shape});
  return lora_fit(tensors);
}

void check_lora_fits(const plan::JobSpec& job, const plan::ModelFolder& model, std::vector<plan::Problem>& out) {
  for (const auto& [flag, list] : {std::pair{"lora", &job.lora}, std::pair{"lora_2", &job.lora_2}})
    for (const auto& use : plan::parse_loras(*list)) {
      LoraFit fit;
      try {
        fit = lora_fit_of(use.file);
      } catch (const InputError& e) {  // a damaged file, found before any work
        if (std::filesystem::is_regular_file(use.file)) out.push_back({flag, "--" + std::string(flag) + ": " + e.what()});
        continue;  // one that is not there: check_loras names it
      }
      const std::string given = "--" + std::string(flag) + " " + use.file;
      if (!fit.not_lora.empty())
        out.push_back({flag, given + ": tensor " + fit.not_lora + " is not a LoRA weight (lora_A / lora_B, lora_down / "
                                     "lora_up, alpha, or a whole difference: diff, diff_b)" +
                                     (fit.is_lora ? std::string("; the file is damaged or of a kind the engine does "
                                                                "not read")
                                                  : "; it looks like a model's own weights, which go with --transformer "
                                                    "FILE")});
      else if (const auto why = lora_mismatch(fit, model, given); !why.empty())
        out.push_back({flag, why});
    }
  // A LoRA given for the transformer itself would fail at load, its first missing weight named.
  for (const auto& [flag, file] : {std::pair{"transformer", &job.transformer_file},
                                   std::pair{"transformer_2", &job.transformer_2_file}}) {
    if (file->empty()) continue;
    try {  // a GGUF file, or a damaged one, is not a safetensors file: the single-file checks name it
      if (lora_fit_of(*file).is_lora)
        out.push_back({flag, "--" + std::string(flag) + " " + *file + ": this file is a LoRA (lora_A / lora_B or "
                             "lora_down / lora_up pairs), not a transformer's weights; give it with --" +
                             (std::string(flag) == "transformer" ? "lora" : "lora_2") +
                             " FILE[:SCALE], and the model's own transformer stays"});
    } catch (const InputError&) {
    }
  }
}

}  // namespace studio::io

#include "plan/families/registry.h"

#include <filesystem>

#include "plan/error.h"
#include "plan/json_fields.h"

namespace fs = std::filesystem;

namespace studio::plan {

const std::vector<const Family*>& families() {
  static const std::vector<const Family*> all = {&cogvideox_family(), &flux_family(), &wan_family(),
                                                     &hunyuan15_family()};
  return all;
}

const Family* family_reading(const std::string& pipeline_class) {
  for (const Family* f : families())
    for (const auto& p : f->pipelines())
      if (p == pipeline_class) return f;
  return nullptr;
}

const Family* family_named_by(const std::string& pipeline_class) {
  for (const Family* f : families())
    if (pipeline_class.rfind(f->class_prefix(), 0) == 0) return f;
  return nullptr;
}

ModelFolder read_model_folder(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw InputError(dir + ": not a folder; --model takes a diffusers folder with model_index.json, transformer/, "
                     "scheduler/ and vae/ (for example a download of THUDM/CogVideoX-2b)");
  ModelFolder m;
  m.dir = dir;
  const std::string index = (fs::path(dir) / "model_index.json").string();
  if (!fs::exists(index, ec))
    throw InputError(dir + ": no model_index.json, so not a model folder. A model folder is a diffusers pipeline's "
                     "folder: model_index.json beside transformer/, scheduler/, vae/ and the text encoders' folders. "
                     "Fetch one in the studio's Models tab or with `dit-models download THUDM/CogVideoX-2b`; a single "
                     "transformer file goes with a folder's configs (--transformer FILE)");
  Fields idx(read_text_file(index), index);
  auto cls = idx.get<std::string>("_class_name", "");
  m.family = family_reading(cls);
  if (!m.family) {
    std::vector<std::string> names;
    for (const Family* f : families())
      for (const auto& p : f->pipelines()) names.push_back(p);
    std::string runs;
    for (size_t i = 0; i < names.size(); ++i)
      runs += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
    throw InputError(index + ": _class_name is '" + cls + "'; this version runs " + runs + " folders");
  }
  for (const char* part : {"transformer", "scheduler"})
    if (!idx.has(part)) throw InputError(index + ": no '" + part + "' entry; a " + cls + " folder needs one");
  m.family->read_parts(m, idx);
  const std::string ecfg = part_path(m, m.t5_part(), "config.json");
  if (fs::exists(ecfg)) m.text_encoder = parse_t5_config(read_text_file(ecfg), ecfg);
  const auto [width_field, text_width] = m.family->t5_width(m);
  if (m.text_encoder && m.text_encoder->d_model != text_width)
    throw InputError(ecfg + ": d_model " + std::to_string(m.text_encoder->d_model) + " does not match the transformer's " +
                     width_field + " " + std::to_string(text_width) + " (the T5 embeddings' width)");
  m.has_tokenizer = fs::exists(part_path(m, m.t5_tokenizer_part(), "spiece.model"));
  return m;
}

}  // namespace studio::plan

#include "pipeline/kept_transformers.h"

#include <sstream>

#include "pipeline/file_identity.h"

namespace studio::pipeline {

namespace {

std::string strength_text(double s) {
  std::ostringstream o;
  o << s;
  return o.str();
}

}  // namespace

std::shared_ptr<models::DitModel> KeptTransformers::take(const plan::ModelFolder& folder, int expert,
                                                         const std::string& how, const Load& load,
                                                         const std::function<void(const std::string&)>& log) {
  const auto& loras = expert == 1 ? folder.loras_2 : folder.loras;
  std::string key = folder.dir + "\n" + folder.variant.id + "\n" + how + "\n" +
                    (folder.quantize ? plan::format_info(*folder.quantize).name : "") +
                    (folder.fp8_gemm ? " fp8 GEMMs" : "") + "\n";
  // The files the weights come from as they are now: a folder downloaded again is another transformer.
  key += part_identity(folder, expert == 1 ? "transformer_2" : "transformer");
  for (const auto& use : loras) key += file_identity(use.file) + "\n";

  std::string why_again;
  if (const auto kept = experts_.find(expert); kept != experts_.end()) {
    const Kept& k = kept->second;
    if (k.key != key) why_again = "the weights, their LoRA files or how they are held changed";
    for (size_t i = 0; why_again.empty() && i < loras.size(); ++i)
      if (k.strengths[i]->merged && k.strengths[i]->value != loras[i].scale)
        why_again = loras[i].flag + " " + loras[i].file +
                    " also changes weights that are not linear layers' (norms, biases, embeddings), which merge into "
                    "them, and its strength changed";
    if (why_again.empty()) {
      std::string changed;
      for (size_t i = 0; i < loras.size(); ++i) {
        if (k.strengths[i]->value == loras[i].scale) continue;
        changed += (changed.empty() ? "" : ", ") + loras[i].file + " " + strength_text(k.strengths[i]->value) +
                   " -> " + strength_text(loras[i].scale);
        k.strengths[i]->value = loras[i].scale;
      }
      log(std::string(expert == 1 ? "the second expert" : "the transformer") + " is kept from the last run" +
          (changed.empty() ? "" : "; LoRA strengths " + changed));
      return k.model;
    }
    experts_.erase(kept);  // its memory goes before the new load
    log("loading the transformer again: " + why_again);
  }

  plan::ModelFolder beside = folder;
  beside.loras_beside = true;
  Kept k{key, nullptr, {}};
  for (auto& use : expert == 1 ? beside.loras_2 : beside.loras)
    k.strengths.push_back(use.live = std::make_shared<plan::LiveStrength>(plan::LiveStrength{use.scale, false}));
  k.model = load(beside);
  return (experts_[expert] = std::move(k)).model;
}

bool KeptTransformers::let_go() {
  const bool any = !experts_.empty();
  experts_.clear();
  return any;
}

}  // namespace studio::pipeline

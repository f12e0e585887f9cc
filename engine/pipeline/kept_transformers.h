// What a worker serving several runs keeps between them (dit-worker --serve, the studio's ranks): each expert's
// transformer as it loaded, its LoRAs beside the linear layers, so that the next run that changes only LoRA
// strengths (or the prompt, seed, steps, size, guidance) loads nothing. The price is memory: the transformer stays
// while the picture encoders, the VAE and the text encoders for other words run (a part short of memory lets it go:
// making_room.h), and Wan2.2 keeps both experts (docs/workers.md).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/dit_model.h"
#include "plan/model_folder.h"

namespace studio::pipeline {

class KeptTransformers {
 public:
  using Load = std::function<std::shared_ptr<models::DitModel>(const plan::ModelFolder&)>;
  // The transformer of `expert` for this run: the kept one when it was loaded from the same weights, LoRA files
  // and `how` (dtype, device, the blocks this rank holds and where), its LoRAs' strengths set to this run's; else
  // the kept one is let go first, and `load` loads it anew (from `folder` with its LoRAs beside the layers).
  std::shared_ptr<models::DitModel> take(const plan::ModelFolder& folder, int expert, const std::string& how,
                                         const Load& load, const std::function<void(const std::string&)>& log);
  // Lets every kept transformer go, for memory another part of the run needs; whether one was kept.
  bool let_go();

 private:
  struct Kept {
    std::string key;
    std::shared_ptr<models::DitModel> model;
    std::vector<std::shared_ptr<plan::LiveStrength>> strengths;  // one per LoRA, in the run's order
  };
  std::map<int, Kept> experts_;
};

}  // namespace studio::pipeline

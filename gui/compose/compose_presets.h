// The size, length and quality presets of a model, named by shape and seconds as an artist reads them
// ("Landscape 3:2, 6.1 s: 720 x 480, 50 steps (model's)"): the model's own size first, a
// draft (half the size and frames, 20 steps) second, then the other shapes at about the same number of
// pixels. Only sizes the model accepts are offered.
#pragma once
#include <QString>

#include <vector>

#include "plan/job.h"

namespace studio::gui {

struct ComposePreset {
  QString name;  // as the preset box shows it
  plan::JobSpec job;
};

// `current`: the job as the fields say (the presets keep its prompt, seed and guidance).
std::vector<ComposePreset> compose_presets(const plan::JobSpec& current, const plan::ModelFolder& model);
// The preset `job` matches in size, frames and steps; -1 when none (the box then says "Custom").
int matching_preset(const std::vector<ComposePreset>& presets, const plan::JobSpec& job, bool video);
// "Landscape 16:9", "Portrait 2:3", "Square 1:1".
QString shape_name(int width, int height);

}  // namespace studio::gui

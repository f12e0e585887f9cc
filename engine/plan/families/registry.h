// The registry of model families: one row each (plan/family.h), in plan/families/<name>.cpp. Everything
// that depends on a folder's family finds its row here or through ModelFolder::family.
#pragma once
#include <string>
#include <vector>

#include "plan/family.h"

namespace studio::plan {

// Each family's row, defined in its own file (the models/ rows name theirs with these).
const Family& cogvideox_family();
const Family& flux_family();
const Family& wan_family();
const Family& hunyuan15_family();

// Every family this version runs, in the order messages list them.
const std::vector<const Family*>& families();
// The family that reads folders of this model_index.json _class_name ("WanPipeline"); null if none does.
const Family* family_reading(const std::string& pipeline_class);
// The family a pipeline class belongs to, whether or not this version runs it
// ("CogVideoXImageToVideoPipeline" -> CogVideoX); null if none.
const Family* family_named_by(const std::string& pipeline_class);

}  // namespace studio::plan

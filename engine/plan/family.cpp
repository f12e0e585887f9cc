#include "plan/family.h"

namespace studio::plan {

const FamilyRules& rules_of(const ModelFolder& m) {
  if (m.flux) return flux_rules();
  return m.wan ? wan_rules() : cogvideox_rules();
}

}  // namespace studio::plan

#include "plan/family.h"

namespace studio::plan {

const FamilyRules& rules_of(const ModelFolder& m) { return m.flux ? flux_rules() : cogvideox_rules(); }

}  // namespace studio::plan

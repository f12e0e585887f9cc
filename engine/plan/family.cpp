#include "plan/family.h"

namespace studio::plan {

const FamilyRules& rules_of(const ModelFolder& m) {
  if (m.flux) return flux_rules();
  return m.wan ? wan_rules() : cogvideox_rules();
}

double decoder_flops_per_pixel(const std::vector<int>& widths, int resnets, int taps) {
  double flops = 0, share = 1;
  for (int c : widths) {
    flops += share * resnets * 2 * (2.0 * taps * c * c);
    share /= 4;
  }
  return flops;
}

}  // namespace studio::plan

#include "hub/known_models.h"

#include "plan/families/registry.h"

namespace studio::hub {

const std::vector<KnownModel>& known_models() {
  static const std::vector<KnownModel> all = [] {
    std::vector<KnownModel> out;
    for (const plan::Family* f : plan::families())
      for (auto& r : f->known_repos())
        out.push_back({r, f->name()});
    return out;
  }();
  return all;
}

}  // namespace studio::hub

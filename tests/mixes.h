// The parallel mixes every family's parity tests run: Ulysses, Ring, both, CFG with each, PipeFusion alone
// and with Ulysses (2 patches).
#pragma once
#include <cctype>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "plan/parallel.h"

namespace studio::test {

struct Mix {
  const char* name;
  plan::ParallelConfig p;
};

inline std::vector<Mix> mixes() {
  auto make = [](int u, int r, bool cfg, int pf = 1) {
    plan::ParallelConfig p;
    p.ulysses_degree = u;
    p.ring_degree = r;
    p.use_cfg_parallel = cfg;
    p.pipefusion_parallel_degree = pf;
    p.num_pipeline_patch = pf > 1 ? 2 : 1;
    return p;
  };
  return {{"ulysses2", make(2, 1, false)}, {"ulysses3", make(3, 1, false)},    {"ulysses4", make(4, 1, false)},
          {"ring2", make(1, 2, false)},    {"ring3", make(1, 3, false)},       {"ring4", make(1, 4, false)},
          {"ulysses2_ring2", make(2, 2, false)}, {"cfg2_ulysses2", make(2, 1, true)}, {"cfg2_ring3", make(1, 3, true)},
          {"pipefusion2", make(1, 1, false, 2)}, {"pipefusion2_ulysses2", make(2, 1, false, 2)}};
}

// A parameterised test's name from its dit-launch flags: "--ulysses_degree 2" -> "ulysses_degree_2", none ->
// "one_process".
inline std::string flags_name(const ::testing::TestParamInfo<const char*>& info) {
  std::string name;
  for (const char* ch = info.param; *ch; ++ch)
    if (std::isalnum(static_cast<unsigned char>(*ch)) || *ch == '_') name += *ch;
    else if (*ch == ' ') name += '_';
  return name.empty() ? std::string("one_process") : name;
}

}  // namespace studio::test

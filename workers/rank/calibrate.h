// `dit-worker --calibrate DTYPE`: what the cost model (plan/cost_model.h) needs of this rank's device and
// of the links between the ranks dit-launch started with it, measured in a few seconds: a matmul's and the
// fused attention's rates, alone and with every rank at work at once (CPU ranks share the cores), and an
// all-to-all's bandwidth and a small collective's latency between every rank.
#pragma once
#include <string>

#include "parallel/dist_env.h"
#include "plan/cost_model.h"

namespace studio::workers {

// Every rank calls it; each returns the same figures (rank 0's alone rates, the mean of the shared ones).
plan::Calibration calibrate(const parallel::DistEnv& env, const std::string& dtype);

}  // namespace studio::workers

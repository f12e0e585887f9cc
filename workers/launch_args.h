// dit-launch's command line, with xDiT's argument names wherever xDiT has the concept. Torch-free so
// that the GUI can build the same command lines and the tests can check every message.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include "plan/job.h"
#include "plan/parallel.h"

namespace studio::workers {

struct LaunchArgs {
  plan::JobSpec job;
  plan::ParallelConfig parallel;
  bool help = false;
  bool version = false;
};

// Throws ArgError with one line naming the flag, the value and what would work.
struct ArgError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

LaunchArgs parse_launch_args(const std::vector<std::string>& argv);
std::string launch_usage();

}  // namespace studio::workers

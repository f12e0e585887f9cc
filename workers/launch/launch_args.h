// dit-launch's command line, with xDiT's argument names wherever xDiT has the concept. Torch-free so
// that the GUI can build the same command lines and the tests can check every message.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include "plan/job.h"
#include "plan/parallel.h"

namespace studio::workers {

// How the ranks are started and watched (torchrun's names for the machine flags).
struct RunArgs {
  int nnodes = 1, node_rank = 0;
  int nproc_per_node = 0;  // several machines: ranks on each (0: the job's ranks / nnodes)
  std::string master_addr;
  int master_port = 0;
  double heartbeat_timeout_s = 30;
  double collective_timeout_s = 600;
  std::string events_log;
};

struct LaunchArgs {
  plan::JobSpec job;
  plan::ParallelConfig parallel;
  RunArgs run;
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

// dit-launch's command line, with xDiT's argument names wherever xDiT has the concept. Torch-free so
// that the GUI can build the same command lines and the tests can check every message.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include "plan/job.h"
#include "plan/parallel.h"

namespace studio::workers {

// How the ranks are started and watched (torchrun's names for the machine flags): what dit-launch's
// flags set, handed to the supervisor as it is (LaunchPlan::run).
struct RunSettings {
  int nnodes = 1, node_rank = 0;
  int nproc_per_node = 0;  // ranks on this machine; 0: the job's whole world on one machine
  std::string master_addr;  // the first machine's address; "" on one machine (loopback)
  int master_port = 0;      // the ranks' rendezvous; 0 on one machine: a free port
  double heartbeat_timeout_s = 30;    // a connected rank silent this long is declared hung
  double collective_timeout_s = 600;  // c10d's timeout in the ranks
  std::string events_log;             // optional: every event as a JSON line
};

struct LaunchArgs {
  plan::JobSpec job;
  plan::ParallelConfig parallel;
  RunSettings run;
  std::string worker;     // --worker PATH: the dit-worker to run (else the first on the search path)
  std::string write_job;  // --write_job FILE: validate, write the job file for dit-worker --job, run nothing
  // The cost model (plan/cost_model.h): --plan prints every valid configuration ranked by predicted time
  // (--json: as a JSON array), --auto runs the best, --calibrate measures the devices again.
  bool plan = false, json = false, auto_pick = false, calibrate = false;
  bool help = false;
  bool version = false;
  // What the command line gave that the run will not use as written, for a note before it starts: a flag given
  // twice (the last counts), a setting the configuration has no use for.
  std::vector<std::string> notes;
};

// Throws ArgError with one line naming the flag, the value and what would work.
struct ArgError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

LaunchArgs parse_launch_args(const std::vector<std::string>& argv);
// Adds to args.notes the settings given that this job has no use for (PipeFusion's without PipeFusion, the
// parallel VAE with one rank).
void note_unused_settings(LaunchArgs& args);
std::string launch_usage();

}  // namespace studio::workers

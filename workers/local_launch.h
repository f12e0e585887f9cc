// Starts the ranks of a job as local dit-worker processes and waits for them. The job file lives in a
// private folder (0700); the rendezvous port is a free one on loopback; the ranks form one process group,
// so that when one fails (or the launcher is told to stop) the others are stopped too, and none is left.
#pragma once
#include <atomic>
#include <string>

#include "plan/job_file.h"

namespace studio::workers {

struct LaunchOutcome {
  int exit_code = 0;    // the job's: 0, or the first failing rank's status (128 + signal when killed)
  int failed_rank = -1;
  std::string message;  // which rank failed and how, for the user
};

// A TCP port that is free on loopback now (for a rendezvous a moment later).
int free_loopback_port();

// `stop` (set by a signal handler) asks every rank to stop.
LaunchOutcome launch_local(const plan::JobFile& job, const std::string& worker_exe, const std::atomic<bool>& stop);

}  // namespace studio::workers

#pragma once
// Starting a rank's process and reading how it ended: the POSIX half of the supervisor.

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "plan/job.h"
#include "workers/events/messages.h"

namespace studio::workers {

struct RankProcess {
  pid_t pid = 0;
  int output_fd = -1;  // the read end of its stdout and stderr, non-blocking
};

// Starts `exe` with `argv` and `env` (NAME=VALUE) in process group `group` (0: a new group it leads). Throws with
// the system's reason when no process could be made; nothing is left open then.
RankProcess spawn_rank(const std::string& exe, std::vector<std::string> argv, std::vector<std::string> env,
                       pid_t group);

// This process's environment with `set` put in (replacing any same-named variable), as NAME=VALUE.
std::vector<std::string> environment_with(const std::vector<std::pair<std::string, std::string>>& set);

// A waitpid status in words ("exited with status 3", "was killed by signal 9 (Killed: ...)").
std::string describe_status(int status);
// The shell's reading of a waitpid status: the exit code, or 128 + the signal.
int exit_status_of(int status);
events::ErrorKind kind_of_status(int status);

// What rank 0, the one that writes, left of the job's outputs when it died while writing (killed, out of memory):
// its partial files and folders (plan/partial_file.h), removed. Had it failed cleanly it removed its own, and
// this finds nothing.
void remove_partial_outputs(const plan::JobSpec& job, pid_t pid);

}  // namespace studio::workers

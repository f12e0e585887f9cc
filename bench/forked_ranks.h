// What the per-rank benches share: N ranks as forked processes on a loopback port (each with its own peak
// memory), and the process's peak resident memory.
#pragma once
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <vector>

#include "workers/launch/supervisor.h"

namespace studio::bench {

inline double peak_rss_gib() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_maxrss) / (1024.0 * 1024.0);  // ru_maxrss is in KiB
}

// Runs rank(r, port) for r in [0, ranks): in this process for one rank, else in forked processes that meet on
// `port`. Returns 0 when every rank ended well.
inline int run_ranks(int ranks, const std::function<void(int rank, int port)>& rank) {
  if (ranks == 1) return rank(0, 0), 0;
  const int port = workers::free_loopback_port();
  std::vector<pid_t> pids;
  for (int r = 0; r < ranks; ++r) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      rank(r, port);
      std::fflush(stdout);
      ::_exit(0);
    }
    pids.push_back(pid);
  }
  int failed = 0;
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  return failed ? 1 : 0;
}

}  // namespace studio::bench

#include "workers/launch/rank_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <cstring>
#include <stdexcept>
#include <string_view>

#include "plan/partial_file.h"
#include "plan/output_format.h"
#include "workers/launch/guarded_main.h"

extern char** environ;

namespace studio::workers {

RankProcess spawn_rank(const std::string& exe, std::vector<std::string> argv, std::vector<std::string> env,
                       pid_t group) {
  // Everything the child needs is built here, before the spawn: posix_spawn's child runs only the file
  // actions and the process group below, then execve (no allocation, nothing but system calls).
  std::vector<char*> args, envp;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("no pipe for its output: ") + strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_adddup2(&actions, fds[1], 1);  // dup2 clears O_CLOEXEC on the copies
  ::posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  ::posix_spawnattr_init(&attr);
  ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  ::posix_spawnattr_setpgroup(&attr, group);
  pid_t pid = 0;
  // glibc reports a failed exec here (its child shares the errno through CLONE_VFORK).
  const int err = ::posix_spawn(&pid, exe.c_str(), &actions, &attr, args.data(), envp.data());
  ::posix_spawn_file_actions_destroy(&actions);
  ::posix_spawnattr_destroy(&attr);
  ::close(fds[1]);
  if (err != 0) {
    ::close(fds[0]);
    throw std::runtime_error(strerror(err));
  }
  ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
  return {pid, fds[0]};
}

std::vector<std::string> environment_with(const std::vector<std::pair<std::string, std::string>>& set) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string_view entry(*e);
    const auto name = entry.substr(0, entry.find('='));
    if (std::none_of(set.begin(), set.end(), [&](const auto& kv) { return kv.first == name; })) env.emplace_back(entry);
  }
  for (const auto& [name, value] : set) env.push_back(name + "=" + value);
  return env;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    // SIGKILL from outside is most often the kernel's out-of-memory killer: say where to look.
    return "was killed by signal " + std::to_string(sig) + " (" + strsignal(sig) +
           (sig == SIGKILL ? ": the system's out-of-memory killer sends it when the machine runs out of memory; "
                             "`dmesg` says whether it did"
                           : "") +
           ")";
  }
  return "stopped";
}

int exit_status_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

events::ErrorKind kind_of_status(int status) {
  return WIFSIGNALED(status) ? events::ErrorKind::Crash : kind_of_exit(WEXITSTATUS(status));
}

void remove_partial_outputs(const plan::JobSpec& job, pid_t pid) {
  std::set<std::string> folders;
  for (const auto* out : {&job.output_file, &job.save_tensors_file, &job.magcache_calibrate})
    if (!out->empty())
      folders.insert(
          std::filesystem::absolute(plan::without_trailing_slash(*out)).lexically_normal().parent_path().string());
  for (const auto& folder : folders) plan::remove_partials(folder, long(pid));
}

}  // namespace studio::workers

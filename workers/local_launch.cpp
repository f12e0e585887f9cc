#include "workers/local_launch.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "plan/error.h"
#include "workers/guarded_main.h"

namespace fs = std::filesystem;

namespace studio::workers {

namespace {

}  // namespace

int free_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) ::close(fd);
    throw InputError("cannot find a free local port for the ranks to meet on");
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

namespace {

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("was killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
                                  strsignal(WTERMSIG(status)) + ")";
  return "stopped";
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

LaunchOutcome launch_local(const plan::JobFile& job, const std::string& worker_exe, const std::atomic<bool>& stop) {
  const int world = job.parallel.world_size();
  char tmpl[] = "/tmp/dit-launch-XXXXXX";
  if (!::mkdtemp(tmpl)) throw InputError(std::string("cannot create a private folder in /tmp: ") + strerror(errno));
  const fs::path dir(tmpl);  // mkdtemp makes it 0700
  const std::string job_path = (dir / "job.json").string();
  std::ofstream(job_path) << plan::to_json(job);
  const std::string port = std::to_string(free_loopback_port());

  std::vector<pid_t> pids;
  pid_t group = 0;
  for (int r = 0; r < world; ++r) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      // The ranks already started would wait for the missing one until the rendezvous times out.
      const std::string why = strerror(errno);
      if (group) ::kill(-group, SIGKILL);
      while (group && ::waitpid(-group, nullptr, 0) > 0) {
      }
      std::error_code ec;
      fs::remove_all(dir, ec);
      throw InputError("cannot start rank " + std::to_string(r) + " of " + std::to_string(world) + ": " + why);
    }
    if (pid == 0) {
      ::setpgid(0, group);  // rank 0 leads the group the others join
      ::setenv("RANK", std::to_string(r).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      ::setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
      ::setenv("MASTER_ADDR", "127.0.0.1", 1);
      ::setenv("MASTER_PORT", port.c_str(), 1);
      ::execl(worker_exe.c_str(), "dit-worker", "--job", job_path.c_str(), static_cast<char*>(nullptr));
      std::fprintf(stderr, "dit-launch: cannot start %s: %s\n", worker_exe.c_str(), strerror(errno));
      ::_exit(kInternal);
    }
    if (r == 0) group = pid;
    ::setpgid(pid, group);  // also from the parent, so no kill can race the child's own call
    pids.push_back(pid);
  }

  LaunchOutcome out;
  size_t running = pids.size();
  bool stopping = false;
  auto stop_all = [&](int sig) { ::kill(-group, sig); };
  std::chrono::steady_clock::time_point stop_sent;
  while (running > 0) {
    int status = 0;
    const pid_t pid = ::waitpid(-group, &status, WNOHANG);
    if (pid > 0) {
      --running;
      const int rank = int(std::find(pids.begin(), pids.end(), pid) - pids.begin());
      if (exit_code_of(status) != 0 && out.failed_rank < 0 && !stopping) {
        out.failed_rank = rank;
        out.exit_code = exit_code_of(status);
        out.message = "rank " + std::to_string(rank) + " (pid " + std::to_string(pid) + ") " + describe_status(status) +
                      "; the other ranks were stopped";
      }
      if (exit_code_of(status) != 0 && !stopping) {
        stopping = true;
        stop_sent = std::chrono::steady_clock::now();
        stop_all(SIGTERM);
      }
      continue;
    }
    if (pid < 0 && errno == ECHILD) break;
    if (stop.load() && !stopping) {
      stopping = true;
      stop_sent = std::chrono::steady_clock::now();
      out.exit_code = kCancelled;
      out.message = "cancelled; every rank was stopped";
      stop_all(SIGTERM);
    }
    // A rank that does not stop within a few seconds of being asked is killed.
    if (stopping && std::chrono::steady_clock::now() - stop_sent > std::chrono::seconds(5)) stop_all(SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return out;
}

}  // namespace studio::workers

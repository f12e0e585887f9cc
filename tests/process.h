// Child processes for the tests: started with posix_spawn, stdout and stderr read through pipes while the
// test waits (with a timeout) for the process to exit or for text to appear. A process still running when
// its Process object goes is killed and reaped, so no test leaves one behind.
#pragma once
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

extern char** environ;

namespace studio::test {

// A command line's arguments; `a + b` joins two.
struct Args : std::vector<std::string> {
  using vector::vector;
};
using EnvVars = std::vector<std::pair<std::string, std::string>>;

inline Args operator+(Args a, const Args& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

class Process {
 public:
  Process() = default;
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  ~Process() {
    if (running()) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    close_pipes();
  }

  // Starts `program` (looked up in PATH when it has no '/') with `args`; `env` is added to this process's
  // environment, replacing variables of the same name. Throws when it cannot be started.
  void start(const std::string& program, const Args& args, const EnvVars& env = {}) {
    if (pid_ > 0) throw std::logic_error("a Process starts once");
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
      throw std::system_error(errno, std::generic_category(), "pipe");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err[1], 2);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    for (int s : {SIGPIPE, SIGINT, SIGTERM, SIGXFSZ}) sigaddset(&defaults, s);  // even where the test ignores them
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

    std::vector<std::string> strings{program};
    strings.insert(strings.end(), args.begin(), args.end());
    const size_t argc = strings.size();
    for (char** e = environ; *e; ++e) {
      const std::string var = *e;
      bool replaced = false;
      for (const auto& [name, value] : env) replaced |= var.compare(0, name.size() + 1, name + "=") == 0;
      if (!replaced) strings.push_back(var);
    }
    for (const auto& [name, value] : env) strings.push_back(name + "=" + value);
    std::vector<char*> argv, envp;
    for (size_t i = 0; i < strings.size(); ++i) (i < argc ? argv : envp).push_back(strings[i].data());
    argv.push_back(nullptr);
    envp.push_back(nullptr);

    const int rc = ::posix_spawnp(&pid_, program.c_str(), &actions, &attr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    ::close(out[1]);
    ::close(err[1]);
    out_fd_ = out[0];
    err_fd_ = err[0];
    if (rc != 0) {
      pid_ = -1;
      close_pipes();
      throw std::system_error(rc, std::generic_category(), "cannot start " + program);
    }
  }

  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }

  bool running() {
    if (pid_ <= 0 || exited_) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      exited_ = true;
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      read_available(0);  // what it wrote before exiting
    }
    return !exited_;
  }

  // Its exit status; -1 when a signal ended it or it has not exited.
  int exit_code() const { return exit_code_; }

  // Waits until it exits (true) or `ms` pass (false), reading its output meanwhile.
  bool wait_for_exit(int ms) {
    const auto end = deadline(ms);
    while (running()) {
      if (Clock::now() >= end) return false;
      read_available(kSliceMs);
    }
    return true;
  }

  // Waits until its stderr holds `text` (true), it exits or `ms` pass (false); a negative `ms`: no limit.
  bool wait_for_stderr(const std::string& text, int ms = -1) {
    const auto end = ms < 0 ? Clock::time_point::max() : deadline(ms);
    while (err_.find(text) == std::string::npos && running() && Clock::now() < end) read_available(kSliceMs);
    return err_.find(text) != std::string::npos;
  }

  pid_t pid() const { return pid_; }
  void signal(int sig) const {
    if (pid_ > 0) ::kill(pid_, sig);
  }

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr int kSliceMs = 20;  // the exit of a process whose children hold its pipes wakes no poll
  static Clock::time_point deadline(int ms) { return Clock::now() + std::chrono::milliseconds(ms); }

  // Reads what the pipes hold, waiting up to `ms` for the first bytes.
  void read_available(int ms) {
    pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
    if (::poll(fds, 2, ms) <= 0) return;
    for (auto [fd, text] : {std::pair{&out_fd_, &out_}, std::pair{&err_fd_, &err_}}) {
      if (*fd < 0) continue;
      pollfd one{*fd, POLLIN, 0};
      char buf[65536];
      while (::poll(&one, 1, 0) > 0) {
        const ssize_t n = ::read(*fd, buf, sizeof buf);
        if (n > 0) {
          text->append(buf, size_t(n));
          continue;
        }
        if (n < 0 && errno == EINTR) continue;
        ::close(*fd);  // end of file (or an error): nothing more will come
        *fd = -1;
        break;
      }
    }
  }

  void close_pipes() {
    for (int* fd : {&out_fd_, &err_fd_})
      if (*fd >= 0) {
        ::close(*fd);
        *fd = -1;
      }
  }

  pid_t pid_ = -1;
  int out_fd_ = -1, err_fd_ = -1;
  bool exited_ = false;
  int exit_code_ = -1;
  std::string out_, err_;
};

struct Finished {
  int code = -1;  // the exit status; -1 when a signal ended it, -2 when it timed out and was killed
  std::string out, err;
};

// Waits for `p` to exit, up to `ms`; past that, kills it and says so at the end of `err`.
inline Finished finish(Process& p, int ms) {
  if (!p.wait_for_exit(ms)) {
    p.signal(SIGKILL);
    p.wait_for_exit(30000);
    return {-2, p.out(), p.err() + "\n(timed out)"};
  }
  return {p.exit_code(), p.out(), p.err()};
}

// Runs `program` to its end (at most `ms`).
inline Finished run(const std::string& program, const Args& args, int ms, const EnvVars& env = {}) {
  Process p;
  p.start(program, args, env);
  return finish(p, ms);
}

// The processes whose parent is `parent` now, as /proc lists them (one that ends meanwhile is skipped).
inline std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    const std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // pid (comm) state ppid ...: comm may hold spaces and parentheses, so read after the last ')'.
    int ppid = 0;
    char state = 0;
    const auto close = stat.rfind(')');
    if (close != std::string::npos && std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) == 2 &&
        ppid == parent)
      out.push_back(pid_t(std::stoi(name)));
  }
  return out;
}

}  // namespace studio::test

#include "workers/launch/calibration.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "plan/error.h"
#include "workers/launch/rank_process.h"
#include "workers/launch/supervisor.h"

namespace fs = std::filesystem;

namespace studio::workers {

namespace {

constexpr int kCalibrationMethod = 5;

constexpr int kPollMs = 100;                       // how often a stop is looked for while the ranks measure
constexpr size_t kMostOutput = 1 << 20;            // of each rank's output, kept
constexpr size_t kOutputShown = 600;               // of a failed rank's output, the end, in the message
constexpr std::chrono::seconds kEndGrace{3};       // from SIGTERM to SIGKILL when the ranks are ended

// A small operation slower than this was measured on a busy machine (other work on its cores stalls every
// dispatch): ten times the slowest host docs/cost-model.md lists. Such figures are used once, not cached.
constexpr double kBusyOpSeconds = 1e-4;

std::string cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/dit-studio";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/dit-studio";
  return "/tmp/dit-studio-cache";
}

// FNV-1a: a file name that is the same for a key in every build.
std::string hex_hash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

// Starts `ranks` workers on loopback in a process group of their own and reads rank 0's answer (its JSON on
// stdout); the others' output is dropped. A rank that fails, or `stop` set (a signal, the studio closing), ends
// them all: nothing is left running.
plan::Calibration measure(const std::string& worker, int ranks, const std::string& dtype,
                          const std::atomic<bool>* stop) {
  const std::string port = std::to_string(free_loopback_port());
  std::vector<RankProcess> procs;
  pid_t group = 0;
  const auto end_all = [&](int sig) {
    if (group > 0) ::kill(-group, sig);
  };
  const auto reap = [&] {
    std::vector<int> status(procs.size(), 0);
    for (size_t r = 0; r < procs.size(); ++r) {
      ::waitpid(procs[r].pid, &status[r], 0);
      if (procs[r].output_fd >= 0) ::close(procs[r].output_fd);
    }
    return status;
  };
  try {
    for (int r = 0; r < ranks; ++r) {
      const auto env = environment_with({{"RANK", std::to_string(r)}, {"LOCAL_RANK", std::to_string(r)},
                                         {"WORLD_SIZE", std::to_string(ranks)},
                                         {"LOCAL_WORLD_SIZE", std::to_string(ranks)},
                                         {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", port}});
      procs.push_back(spawn_rank(worker, {worker, "--calibrate", dtype}, env, group));
      if (group == 0) group = procs.front().pid;
    }
  } catch (const std::exception& e) {
    end_all(SIGKILL);
    reap();
    throw std::runtime_error("cannot start " + worker + " --calibrate: " + e.what());
  }
  std::vector<std::string> out(procs.size());  // each rank's: rank 0's is its JSON, a failed one's says why
  bool stopped = false, ending = false;
  int failed = -1;  // the first rank seen ending badly: the others were ended after it
  std::chrono::steady_clock::time_point ending_since;
  for (size_t open = procs.size(); open > 0;) {
    std::vector<pollfd> fds;
    for (const auto& p : procs) fds.push_back({p.output_fd, POLLIN, 0});
    ::poll(fds.data(), fds.size(), kPollMs);
    for (size_t r = 0; r < procs.size(); ++r) {
      if (procs[r].output_fd < 0 || !(fds[r].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      const ssize_t n = ::read(procs[r].output_fd, buf, sizeof buf);
      if (n > 0 && out[r].size() < kMostOutput) out[r].append(buf, size_t(n));
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        ::close(procs[r].output_fd);
        procs[r].output_fd = -1;
        --open;
      }
    }
    // A rank that has ended badly leaves the others waiting for it at the rendezvous: end them.
    for (size_t r = 0; r < procs.size() && failed < 0 && !stopped; ++r) {
      siginfo_t info{};
      if (::waitid(P_PID, id_t(procs[r].pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == procs[r].pid &&
          (info.si_code != CLD_EXITED || info.si_status != 0))
        failed = int(r);
    }
    stopped |= stop && *stop;
    if ((failed >= 0 || stopped) && !ending) {
      ending = true;
      end_all(SIGTERM);
      ending_since = std::chrono::steady_clock::now();
    } else if (ending && std::chrono::steady_clock::now() - ending_since > kEndGrace) {
      end_all(SIGKILL);  // one that does not stop on SIGTERM (blocked in the rendezvous)
    }
  }
  const auto status = reap();
  if (stopped) throw Cancelled();
  // The rank that failed first says why; the others were ended by this loop, not by the machine.
  if (failed < 0)
    for (size_t r = 0; r < status.size() && failed < 0; ++r)
      if (exit_status_of(status[r]) != 0) failed = int(r);
  if (failed >= 0) {
    const std::string& said = out[size_t(failed)];
    const std::string last = said.substr(said.size() - std::min(said.size(), kOutputShown));
    throw std::runtime_error(worker + " --calibrate " + dtype + " on " + std::to_string(ranks) +
                             " ranks failed: rank " + std::to_string(failed) + " " +
                             describe_status(status[size_t(failed)]) +
                             (last.empty() ? std::string() : ": " + last));
  }
  return plan::calibration_from_json(out[0], worker + " --calibrate");
}

}  // namespace

std::string calibration_key(const Devices& d, int ranks, const std::string& dtype) {
  std::ostringstream k;
  // What is measured and how (lockstep rates, pair links, threads per rank, memory and dispatch): figures
  // of another method are measured again.
  k << "method " << kCalibrationMethod << "; ";
  for (const auto& g : d.gpus) k << "gpu " << g.index << " " << g.name << " " << g.memory_bytes << "; ";
  k << "cpu " << d.cpu_cores << " cores " << d.cpu_memory_bytes << " bytes; " << d.build << "; " << ranks
    << " ranks; " << dtype;
  return k.str();
}

std::string calibration_cache_file(const std::string& key) {
  return cache_dir() + "/calibration-" + hex_hash(key) + ".json";
}

std::optional<plan::Calibration> cached_calibration(const Devices& devices, int ranks, const std::string& dtype) {
  const std::string key = calibration_key(devices, ranks, dtype), file = calibration_cache_file(key);
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  const auto j = nlohmann::json::parse(text.str(), nullptr, false);
  if (!in || !j.is_object() || j.value("key", "") != key || !j.contains("calibration")) return std::nullopt;
  try {
    return plan::calibration_from_json(j["calibration"].dump(), file);
  } catch (const std::exception&) {  // unreadable: measured again and replaced by calibration_for
    return std::nullopt;
  }
}

plan::Calibration calibration_for(const std::string& worker, const Devices& devices, int ranks,
                                  const std::string& dtype, bool again, bool* used_cache, std::string* busy_note,
                                  const std::atomic<bool>* stop) {
  const std::string key = calibration_key(devices, ranks, dtype), file = calibration_cache_file(key);
  if (used_cache) *used_cache = false;
  if (!again)
    if (auto c = cached_calibration(devices, ranks, dtype)) {
      if (used_cache) *used_cache = true;
      return *c;
    }
  const auto c = measure(worker, ranks, dtype, stop);
  if (c.op_seconds > kBusyOpSeconds) {
    if (busy_note)
      *busy_note = "the machine was busy (a small operation took " + std::to_string(int(c.op_seconds * 1e6)) + " us)";
    return c;
  }
  std::error_code ec;
  fs::create_directories(fs::path(file).parent_path(), ec);
  const std::string tmp = file + ".tmp";
  std::ofstream(tmp) << nlohmann::json{{"key", key}, {"calibration", nlohmann::json::parse(plan::calibration_json(c))}}.dump(2)
                     << "\n";
  fs::rename(tmp, file, ec);  // a cache that cannot be written only costs a measurement next time
  return c;
}

}  // namespace studio::workers

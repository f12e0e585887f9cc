// What the suites that run dit-launch and dit-worker as processes share: the demo job, the events a launcher
// logs, and whether the processes a run started are gone.
#pragma once
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "process.h"
#include "support.h"

namespace studio::test {

using nlohmann::json;

inline const std::string kLaunch = bin("dit-launch");
inline const std::string kWorker = bin("dit-worker");
inline constexpr int kRunMs = 120000;

// A short job on the built-in demo model: 9 frames, a few steps.
inline Args demo_job(int steps) {
  return {"--prompt", "a paper boat", "--num_frames", "9", "--num_inference_steps", std::to_string(steps)};
}

// The events the launcher has logged so far: whole lines only, since it may be writing the last one.
inline std::vector<json> read_events(const std::string& path) {
  std::vector<json> out;
  std::ifstream f(path);
  const std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  for (size_t at = 0, end; (end = all.find('\n', at)) != std::string::npos; at = end + 1)
    out.push_back(json::parse(all.substr(at, end - at)));
  return out;
}

inline std::vector<json> of_kind(const std::vector<json>& all, const char* kind, int rank = -1) {
  std::vector<json> out;
  for (const auto& e : all)
    if (e["kind"] == kind && (rank < 0 || e["body"]["rank"] == rank)) out.push_back(e);
  return out;
}

inline std::vector<int64_t> pids_of(const std::vector<json>& all) {
  std::vector<int64_t> pids;
  for (const auto& h : of_kind(all, "hello")) pids.push_back(h["body"]["pid"].get<int64_t>());
  return pids;
}

inline int64_t pid_of_rank(const std::vector<json>& all, int rank) {
  const auto hello = of_kind(all, "hello", rank);
  if (hello.empty()) throw std::runtime_error("no hello from rank " + std::to_string(rank));
  return hello[0]["body"]["pid"].get<int64_t>();
}

// Whether `pid` still runs: it exists and is not a zombie (an orphan's exit is reaped by init, whenever).
inline bool still_runs(int64_t pid) {
  if (::kill(pid_t(pid), 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const auto paren = line.rfind(')');  // "pid (name) state ...": the name may hold spaces
  return paren == std::string::npos || paren + 2 >= line.size() || line[paren + 2] != 'Z';
}

// True once none of `pids` runs (waits up to `ms` for the kernel to finish with them).
inline bool all_gone(const std::vector<int64_t>& pids, int ms = 10000) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  for (;;) {
    bool any = false;
    for (auto pid : pids) any |= still_runs(pid);
    if (!any) return true;
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

inline int64_t file_size(const std::string& path) {
  return std::filesystem::exists(path) ? int64_t(std::filesystem::file_size(path)) : -1;
}

class Workers : public ::testing::Test {
 protected:
  TempDir tmp_;
  std::string path(const std::string& name) { return tmp_.path(name); }
};

}  // namespace studio::test

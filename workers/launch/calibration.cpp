#include "workers/launch/calibration.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "workers/launch/supervisor.h"

namespace fs = std::filesystem;

namespace studio::workers {

namespace {

constexpr int kCalibrationMethod = 5;

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

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Starts `ranks` workers on loopback (rank 0 in the foreground, its JSON on stdout) and reads rank 0's answer.
plan::Calibration measure(const std::string& worker, int ranks, const std::string& dtype) {
  const int port = free_loopback_port();
  std::string cmd;
  auto rank = [&](int r) {
    return "RANK=" + std::to_string(r) + " LOCAL_RANK=" + std::to_string(r) + " WORLD_SIZE=" + std::to_string(ranks) +
           " LOCAL_WORLD_SIZE=" + std::to_string(ranks) +
           " MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) + " " + quoted(worker) + " --calibrate " +
           quoted(dtype);
  };
  for (int r = 1; r < ranks; ++r) cmd += rank(r) + " >/dev/null 2>&1 & ";
  cmd += rank(0) + " 2>&1; s=$?; wait; exit $s";
  std::FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("cannot start " + worker + " --calibrate");
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0 && out.size() < (1 << 20);) out.append(buf, n);
  if (::pclose(p) != 0)
    throw std::runtime_error(worker + " --calibrate " + dtype + " on " + std::to_string(ranks) +
                             " ranks failed: " + out.substr(0, 600));
  return plan::calibration_from_json(out, worker + " --calibrate");
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
                                  const std::string& dtype, bool again, bool* used_cache, std::string* busy_note) {
  const std::string key = calibration_key(devices, ranks, dtype), file = calibration_cache_file(key);
  if (used_cache) *used_cache = false;
  if (!again)
    if (auto c = cached_calibration(devices, ranks, dtype)) {
      if (used_cache) *used_cache = true;
      return *c;
    }
  const auto c = measure(worker, ranks, dtype);
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

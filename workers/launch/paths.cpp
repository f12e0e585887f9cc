#include "workers/launch/paths.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <set>

namespace fs = std::filesystem;

namespace studio::workers {

std::string executable_dir() {
  char exe[PATH_MAX] = {0};
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  return fs::path(n > 0 ? std::string(exe, size_t(n)) : ".").parent_path().string();
}

std::string programs_dir() {
  const char* dir = std::getenv("DIT_STUDIO_BIN_DIR");
  return dir && *dir ? std::string(dir) : executable_dir();
}

// STUDIO_DATA_FROM_BIN is the install layout's data folder relative to its bin folder (from CMake's
// GNUInstallDirs; the build tree has the same layout).
std::string data_dir() { return (fs::path(programs_dir()) / STUDIO_DATA_FROM_BIN).lexically_normal().string(); }
std::string demo_model_dir() { return (fs::path(data_dir()) / "demo-model").string(); }
std::string demo_flux_dir() { return (fs::path(data_dir()) / "demo-flux").string(); }

std::vector<std::string> worker_search_path(const std::vector<std::string>& chosen) {
  std::vector<std::string> path(chosen.begin(), chosen.end());
  if (const char* env = std::getenv("DIT_STUDIO_WORKER_PATH")) {
    std::string s = env;
    for (size_t start = 0, end; start <= s.size(); start = end + 1) {
      end = s.find(':', start);
      if (end == std::string::npos) end = s.size();
      if (end > start) path.push_back(s.substr(start, end - start));
    }
  }
  path.push_back(programs_dir());
  return path;
}

namespace {

bool is_executable_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

}  // namespace

std::string worker_at(const std::string& entry) {
  const fs::path e(entry);
  for (const auto& candidate : {e, e / "dit-worker", e / "bin" / "dit-worker"})
    if (is_executable_file(candidate)) return candidate.string();
  return {};
}

std::vector<std::string> find_workers(const std::vector<std::string>& chosen) {
  std::vector<std::string> found;
  std::set<fs::path> seen;
  for (const auto& entry : worker_search_path(chosen)) {
    const auto worker = worker_at(entry);
    std::error_code ec;
    const auto real = worker.empty() ? fs::path() : fs::canonical(worker, ec);
    if (!worker.empty() && !ec && seen.insert(real).second) found.push_back(worker);
  }
  return found;
}

std::string worker_program(const std::vector<std::string>& chosen) {
  const auto found = find_workers(chosen);
  return found.empty() ? (fs::path(programs_dir()) / "dit-worker").string() : found.front();
}

}  // namespace studio::workers

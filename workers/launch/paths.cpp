#include "workers/launch/paths.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>

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

std::string worker_program() { return (fs::path(programs_dir()) / "dit-worker").string(); }

std::string demo_model_dir() {
  return (fs::path(programs_dir()).parent_path() / "share" / "dit-studio" / "demo-model").string();
}

std::string demo_flux_dir() {
  return (fs::path(programs_dir()).parent_path() / "share" / "dit-studio" / "demo-flux").string();
}

}  // namespace studio::workers

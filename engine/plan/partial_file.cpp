#include "plan/partial_file.h"

#include <unistd.h>

#include <filesystem>
#include <system_error>

#include "plan/output_format.h"

namespace fs = std::filesystem;

namespace studio::plan {

std::string partial_path(const std::string& path) {
  const fs::path p(without_trailing_slash(path));
  return (p.parent_path() / ("." + p.filename().string() + ".partial-" + std::to_string(::getpid()) +
                                 p.extension().string()))
      .string();
}

int remove_partials(const std::string& folder, long pid) {
  const std::string mark = ".partial-" + std::to_string(pid);
  std::error_code ec;
  int removed = 0;
  for (auto it = fs::directory_iterator(folder.empty() ? "." : folder, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    // ".NAME.partial-PID", then nothing or an extension: not another process's whose pid starts alike.
    const std::string name = it->path().filename().string();
    const auto at = name.find(mark);
    if (name.empty() || name[0] != '.' || at == std::string::npos) continue;
    const auto after = at + mark.size();
    if (after < name.size() && name[after] != '.') continue;
    std::error_code gone;
    if (fs::remove_all(it->path(), gone) > 0) ++removed;
  }
  return removed;
}

}  // namespace studio::plan

#include "video/placing.h"

#include <filesystem>

#include "plan/error.h"
#include "plan/partial_file.h"

namespace studio::video {

namespace fs = std::filesystem;

void place_with_sidecar(const std::string& tmp, const std::string& path, const std::string& sidecar_tmp,
                        const std::string& sidecar, const char* what) {
  std::error_code ec, ignored;
  const std::string aside = plan::partial_path(sidecar);  // hidden, and named as this process's partial files are
  const bool had = fs::is_regular_file(sidecar, ignored);
  if (had) fs::rename(sidecar, aside, ec);
  if (ec)
    throw InputError("--output " + path + ": cannot replace its sidecar JSON " + sidecar + " (" + ec.message() + ")");
  fs::rename(sidecar_tmp, sidecar, ec);
  const bool placed = !ec;
  if (placed) fs::rename(tmp, path, ec);
  if (ec) {
    if (placed) fs::remove(sidecar, ignored);
    if (had) fs::rename(aside, sidecar, ignored);
    throw InputError("--output " + path + ": cannot move the finished " + what + " into place (" + ec.message() + ")");
  }
  if (had) fs::remove(aside, ignored);
}

}  // namespace studio::video

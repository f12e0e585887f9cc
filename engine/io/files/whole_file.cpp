#include "io/files/whole_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "plan/partial_file.h"
#include "plan/error.h"

namespace studio::io {

void write_whole_file(const std::string& path, const std::function<void(const PutBytes& put)>& write) {
  const std::string tmp = plan::partial_path(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw InputError(path + ": cannot write: " + std::strerror(errno));
  const auto give_up = [&](const std::string& why) {
    ::unlink(tmp.c_str());
    throw InputError(path + ": " + why);
  };
  write([&](const void* p, size_t n) {
    const char* c = static_cast<const char*>(p);
    while (n > 0) {
      const ssize_t w = ::write(fd, c, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        const std::string why = std::strerror(w < 0 ? errno : ENOSPC);
        ::close(fd);
        give_up("write failed: " + why + " (nothing was left behind)");
      }
      c += w;
      n -= size_t(w);
    }
  });
  if (::fsync(fd) != 0 || ::close(fd) != 0) give_up(std::string("write failed: ") + std::strerror(errno) +
                                                    " (nothing was left behind)");
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    give_up(std::string("cannot move the finished file into place: ") + std::strerror(errno));
}

}  // namespace studio::io

#include "io/files/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "plan/error.h"

namespace studio::io {

Mapping map_whole_file(const std::string& path, uint64_t min_bytes, const std::string& minimum) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw InputError(path + ": " + (errno == ENOENT ? "file not found" : std::string("cannot open: ") + std::strerror(errno)));
  const auto give_up = [&](const std::string& why) {
    ::close(fd);
    throw InputError(path + ": " + why);
  };
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) give_up("not a regular file");
  const uint64_t size = uint64_t(st.st_size);
  if (size < min_bytes) give_up("truncated: " + std::to_string(size) + " bytes, shorter than " + minimum);
  void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) throw InputError(path + ": cannot map: " + std::strerror(errno));
  return {map, size};
}

}  // namespace studio::io

#include "plan/human_bytes.h"

#include <cstdio>

namespace studio::plan {

std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024 && u < 6) v /= 1024, ++u;
  char s[32];
  std::snprintf(s, sizeof s, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return s;
}

std::string counted(long long n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace studio::plan

#include "plan/human_bytes.h"

#include <cstdio>
#include <sstream>

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

std::string short_number(double x) {
  std::ostringstream s;
  s << x;
  return s.str();
}

}  // namespace studio::plan

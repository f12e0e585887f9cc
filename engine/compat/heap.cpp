#include "compat/heap.h"

#include <limits>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace studio::compat {

void keep_freed_memory_in_heap() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
#endif
}

void give_back_free_heap() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace studio::compat

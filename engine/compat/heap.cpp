#include "compat/heap.h"

#include <cstdlib>
#include <limits>
#include <mutex>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace studio::compat {

namespace {

std::mutex scopes_mutex;
int scopes = 0;  // HeapForRepeatedWork alive

#if defined(__GLIBC__)
// glibc's own settings once its threshold has grown to its largest (setting any of them fixes them all).
constexpr int kMappedFrom = 32 << 20;
#endif

}  // namespace

HeapForRepeatedWork::HeapForRepeatedWork() {
  std::lock_guard<std::mutex> lock(scopes_mutex);
#if defined(__GLIBC__)
  if (scopes == 0) {
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
  }
#endif
  ++scopes;
}

HeapForRepeatedWork::~HeapForRepeatedWork() {
  std::lock_guard<std::mutex> lock(scopes_mutex);
  if (--scopes > 0) return;
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, kMappedFrom);
  mallopt(M_MMAP_MAX, 65536);
  mallopt(M_TRIM_THRESHOLD, 2 * kMappedFrom);
#endif
}

void huge_pages_for_large_tensors() { setenv("THP_MEM_ALLOC_ENABLE", "1", /*overwrite=*/0); }

void give_back_free_heap() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace studio::compat

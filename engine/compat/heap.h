// How a rank's process keeps the memory it frees (glibc's heap; elsewhere these do nothing).
#pragma once

namespace studio::compat {

// While one is alive, large blocks come from the heap and go back to it instead of being mapped afresh (glibc maps
// large blocks anew, and the kernel zeroes each new page on first touch; docs/memory.md says what that costs).
// That pays where the same sizes come back again and again, as in the denoising loop. Work whose sizes change as it
// goes (a VAE's levels, each wider than the last) leaves the heap full of holes it cannot reuse, so outside these
// scopes large blocks are mapped and unmapped as glibc does by default. The free pages a scope leaves are handed
// back by give_back_free_heap(), once what the scope's work held has gone too. Scopes may nest and overlap across
// threads (ranks as threads).
class HeapForRepeatedWork {
 public:
  HeapForRepeatedWork();
  ~HeapForRepeatedWork();
  HeapForRepeatedWork(const HeapForRepeatedWork&) = delete;
  HeapForRepeatedWork& operator=(const HeapForRepeatedWork&) = delete;
};

// Asks LibTorch to back its large CPU tensors with huge pages (THP_MEM_ALLOC_ENABLE, LibTorch 2.1 and newer; the
// environment's setting wins): a fresh block then costs one page fault per huge page instead of one per page.
// Before any tensor is made, as LibTorch reads it once: every program that links the engine calls it when it
// loads (compat/vector_math_kernels.cpp).
void huge_pages_for_large_tensors();

// Hands the heap's free pages back to the system: after a load whose temporaries (a whole transformer before its
// blocks were sharded, converted copies of the file's tensors) are gone, so that the rank's memory is what it holds.
void give_back_free_heap();

}  // namespace studio::compat

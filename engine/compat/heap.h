// How a rank's process keeps the memory it frees (glibc's heap; elsewhere these do nothing).
#pragma once

namespace studio::compat {

// Large blocks come from the heap and go back to it instead of being mapped afresh: glibc maps every block over
// 32 MB anew and the kernel zeroes each new page on first touch, which cost 8-10% of a CPU step and a third of the
// demo's decode (docs/performance.md). Freed memory then stays with the process until give_back_free_heap().
void keep_freed_memory_in_heap();

// Hands the heap's free pages back to the system: after a load whose temporaries (a whole transformer before its
// blocks were sharded, converted copies of the file's tensors) are gone, so that the rank's memory is what it holds.
void give_back_free_heap();

}  // namespace studio::compat

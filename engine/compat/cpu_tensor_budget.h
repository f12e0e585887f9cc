// Fault injection for out-of-memory tests (dit-worker's DIT_WORKER_MEMORY_LIMIT_MB): a budget on the
// memory of CPU tensors, kept by LibTorch's own allocator interface. Unlike a process limit (RLIMIT_DATA)
// it fires at the same allocation every run: the same job asks for the same tensors in the same order,
// whatever the heap happened to keep from earlier steps.
#pragma once
#include <cstddef>
#include <string>

namespace studio::compat {

// From this call on, the memory of every CPU tensor created comes through a counting allocator, and an
// allocation that would take those tensors past `budget_bytes` at once throws a c10::OutOfMemoryError
// worded as LibTorch's own ("... can't allocate memory: you tried to allocate N bytes ..."), naming `why`
// (what set the budget). Not counted: tensors created before the call (also when they grow later), and
// memory that libraries take without LibTorch's CPU allocator (Gloo's, OpenMP's). A later call sets a new
// budget, counted from then.
void limit_cpu_tensor_memory(size_t budget_bytes, const std::string& why);

}  // namespace studio::compat

#include "compat/cpu_tensor_budget.h"

#include <malloc.h>

#include <mutex>
#include <unordered_map>

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <c10/util/Exception.h>
#include <torch/version.h>

namespace studio::compat {
namespace {

// What the counting allocator holds, under one lock (this runs only under fault injection): each block
// it made with its size, their total, and the budget. A block it did not make may still be freed through
// it (oneDNN frees through whichever CPU allocator is current): that one is freed and not counted.
struct Budget {
  std::mutex mutex;
  std::unordered_map<void*, size_t> blocks;
  size_t in_use = 0, limit = 0;
  std::string budget_source;
};
Budget& budget() {
  static auto* b = new Budget;  // never destroyed: blocks may be freed during the process's exit
  return *b;
}

void give_back(void* data) {
  {
    Budget& b = budget();
    std::lock_guard<std::mutex> lock(b.mutex);
    if (const auto it = b.blocks.find(data); it != b.blocks.end()) {
      b.in_use -= it->second;
      b.blocks.erase(it);
    }
  }
  c10::free_cpu(data);
}

c10::DataPtr take(size_t n) {
  Budget& b = budget();
  std::lock_guard<std::mutex> lock(b.mutex);
  TORCH_CHECK_WITH(OutOfMemoryError, b.in_use + n <= b.limit,
                   "CPU tensor budget: can't allocate memory: you tried to allocate ", n, " bytes with ", b.in_use,
                   " of the ", b.limit, " bytes that ", b.budget_source, " allows in use");
  void* data = c10::alloc_cpu(n);
  if (data) {
    const size_t size = malloc_usable_size(data);  // what the heap gave, as the tensors' memory
    b.blocks.emplace(data, size);
    b.in_use += size;
  }
  return {data, data, &give_back, c10::Device(c10::DeviceType::CPU)};
}

// LibTorch's default CPU allocation (c10::alloc_cpu: aligned, from the heap), counted and capped. Its
// DataPtr carries the plain pointer as context, so the raw interface works as with the default one.
class BudgetAllocator final : public c10::Allocator {
 public:
#if TORCH_VERSION_MAJOR >= 2
  c10::DataPtr allocate(size_t n) override { return take(n); }
  void copy_data(void* dest, const void* src, std::size_t count) const override { default_copy_data(dest, src, count); }
#else
  c10::DataPtr allocate(size_t n) const override { return take(n); }
#endif
  c10::DeleterFnPtr raw_deleter() const override { return &give_back; }
};

}  // namespace

void limit_cpu_tensor_memory(size_t budget_bytes, const std::string& why) {
  static auto* allocator = new BudgetAllocator;  // LibTorch keeps the pointer until the process ends
  {
    Budget& b = budget();
    std::lock_guard<std::mutex> lock(b.mutex);
    b.budget_source = why;
    b.limit = b.in_use + budget_bytes;  // counted from now: what the allocator already holds is added
  }
  c10::SetCPUAllocator(allocator, /*priority=*/1);  // above LibTorch's default (0)
}

}  // namespace studio::compat

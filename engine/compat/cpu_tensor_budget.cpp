#include "compat/cpu_tensor_budget.h"

#include <malloc.h>

#include <atomic>
#include <cstring>
#include <mutex>

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <c10/util/Exception.h>
#include <torch/version.h>

namespace studio::compat {
namespace {

// What the counting allocator holds: the tensors' bytes (as the heap sizes their blocks) and the budget.
std::atomic<size_t> g_in_use{0};
std::atomic<size_t> g_budget{0};
std::mutex g_why_mutex;
std::string g_why;

void give_back(void* data) {
  g_in_use.fetch_sub(malloc_usable_size(data));
  c10::free_cpu(data);
}

// LibTorch's default CPU allocation (c10::alloc_cpu: aligned, from the heap), counted and capped. Its
// DataPtr carries the plain pointer as context, so the raw interface works as with the default one.
class BudgetAllocator final : public c10::Allocator {
 public:
#if TORCH_VERSION_MAJOR >= 2
  c10::DataPtr allocate(size_t n) override { return take(n); }
#else
  c10::DataPtr allocate(size_t n) const override { return take(n); }
#endif
  c10::DeleterFnPtr raw_deleter() const override { return &give_back; }
  // Pure virtual in 2.x, absent in 1.13 (hence no `override`).
  void copy_data(void* dest, const void* src, std::size_t count) const { std::memcpy(dest, src, count); }

 private:
  static c10::DataPtr take(size_t n) {
    const size_t in_use = g_in_use.load(), budget = g_budget.load();
    if (in_use + n > budget) {
      std::lock_guard<std::mutex> lock(g_why_mutex);
      TORCH_CHECK_WITH(OutOfMemoryError, false, "CPU tensor budget: can't allocate memory: you tried to allocate ", n,
                       " bytes with ", in_use, " of the ", budget, " bytes that ", g_why, " allows in use");
    }
    void* data = c10::alloc_cpu(n);
    g_in_use.fetch_add(malloc_usable_size(data));
    return {data, data, &give_back, c10::Device(c10::DeviceType::CPU)};
  }
};

}  // namespace

void limit_cpu_tensor_memory(size_t budget_bytes, const std::string& why) {
  static BudgetAllocator allocator;  // lives as long as the tensors it made
  {
    std::lock_guard<std::mutex> lock(g_why_mutex);
    g_why = why;
  }
  // The budget counts from now: what the allocator already holds is added to it.
  g_budget.store(g_in_use.load() + budget_bytes);
  c10::SetCPUAllocator(&allocator, /*priority=*/1);  // above LibTorch's default (0)
}

}  // namespace studio::compat

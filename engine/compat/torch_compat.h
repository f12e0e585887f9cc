// Every call that differs between LibTorch 1.13 (Debian, CPU) and 2.x (CUDA builds) goes through
// here; nothing else in the code checks a torch version.
#pragma once
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/util/intrusive_ptr.h>
#include <torch/version.h>

namespace c10d {
class Store;
class ProcessGroup;
class Backend;
}  // namespace c10d

namespace studio::compat {

// What a c10d process group is called: ProcessGroup in 1.13; in 2.x the collectives live on Backend.
#if TORCH_VERSION_MAJOR >= 2
using CommBackend = c10d::Backend;
#else
using CommBackend = c10d::ProcessGroup;
#endif

// A process group over `store`: NCCL for CUDA devices (builds against a CUDA LibTorch), Gloo otherwise,
// bound to `host`'s interface ("" = the default one).
c10::intrusive_ptr<CommBackend> make_comm_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                  const at::Device& device, std::chrono::milliseconds timeout,
                                                  const std::string& host);

// softmax(q k^T / sqrt(head_dim)) v for q, k, v of shape [B, heads, S, head_dim].
// 2.x: at::scaled_dot_product_attention (flash / memory-efficient kernels where available).
// 1.13 has no public fused kernel: the math, in blocks of queries so that the score matrix of a
// real-size video (17,776 tokens) never has to exist whole.
at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);

// Free and total memory of a CUDA device, from the CUDA runtime that a CUDA LibTorch loads (looked up at
// run time, so CPU builds compile the same code); nullopt on the CPU or when it cannot be read.
struct DeviceMemory {
  size_t free_bytes = 0, total_bytes = 0;
};
std::optional<DeviceMemory> device_memory(const at::Device& device);

// The caching allocator's figures for a CUDA device (bytes in tensors, held from the driver, the peak of
// the first); nullopt on the CPU and in builds without CUDA.
struct AllocatorStats {
  size_t allocated = 0, reserved = 0, peak = 0;
};
std::optional<AllocatorStats> allocator_stats(const at::Device& device);

// The visible CUDA devices' names and memory, from the runtime a CUDA LibTorch loads; empty without.
struct GpuInfo {
  int index = 0;
  std::string name;
  size_t total_bytes = 0, free_bytes = 0;
};
std::vector<GpuInfo> list_gpus();

// "1.13.1" etc., for logs and --version.
const char* torch_version();

}  // namespace studio::compat

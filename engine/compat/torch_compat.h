// Every call that differs between LibTorch 1.13 (Debian, CPU) and 2.x (CUDA builds) goes through
// here (and compat/cpu_tensor_budget.h); nothing else in the code checks a torch version.
#pragma once
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/util/intrusive_ptr.h>
#include <torch/csrc/distributed/c10d/Work.hpp>
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

// A process group over `store`: NCCL for CUDA devices (builds against a CUDA LibTorch; its communicator
// made at once for `device`), Gloo otherwise, bound to `host`'s interface ("" = the default one).
// With TORCH_DISTRIBUTED_DEBUG=DETAIL in the environment (c10d's convention), the collectives' group is
// wrapped in c10d's checker, which compares every collective's kind, shapes, dtypes and devices across
// the ranks (over a Gloo group of its own) before running it: a mismatch throws on every rank instead of
// hanging. Point-to-point transfers then go through a second, plain group: the checker also compares
// sequence numbers, which count transfers, and neighbours rightly make different numbers of them.
struct CommBackends {
  c10::intrusive_ptr<CommBackend> collectives, peers;  // one and the same unless checking
};
CommBackends make_comm_backends(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                const at::Device& device, std::chrono::milliseconds timeout, const std::string& host);
// Whether TORCH_DISTRIBUTED_DEBUG=DETAIL is set.
bool collective_checks_enabled();

// Sends and receives posted as one batch: one coalesced NCCL group where the backend has them (as torch's
// batch_isend_irecv), else every one posted before any is waited on. `work` to wait on; `buffers` keeps
// what c10d was handed alive until then.
struct PeerWork {
  std::vector<c10::intrusive_ptr<c10d::Work>> work;
  std::vector<std::vector<at::Tensor>> buffers;
};
struct PeerTransfer {
  bool send;
  at::Tensor tensor;
  int peer;
};
PeerWork post_peer_batch(CommBackend& backend, const std::vector<PeerTransfer>& transfers);

// CUDA: whether float32 matmuls and convolutions may use TF32 tensor cores (LibTorch allows it for
// convolutions by default; the engine passes the job's --allow_tf32, off unless asked for).
void allow_tf32(bool allow);

// A host tensor on `device`: on CUDA through pinned memory and a non-blocking copy, so the host does not
// wait for the device's queue to drain; on the CPU, `t` itself.
at::Tensor to_device_async(const at::Tensor& t, const at::Device& device);

// Waits until the device has run everything queued on its current stream (nothing on the CPU).
void synchronize(const at::Device& device);

// Makes a CUDA device the calling thread's current one (NCCL and the caching allocator follow it).
void bind_device(const at::Device& device);

// fp8 bytes (uint8, float8_e4m3fn or, with `e5m2`, float8_e5m2) viewed as LibTorch's own float8 type, which
// converts to the float types exactly; undefined in a LibTorch without them (1.13), where the caller looks the
// bytes up in a table.
at::Tensor float8_view(const at::Tensor& bytes, bool e5m2);

// softmax(q k^T / sqrt(head_dim)) v for q, k, v of shape [B, heads, S, head_dim].
// 2.x: on CUDA the fused kernel compat/attention_kernels.h chooses (defined there); on the CPU LibTorch's.
// 1.13 has no public fused kernel: the math, in blocks of queries so that the score matrix of a
// real-size video (17,776 tokens) never has to exist whole.
at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);

// The same attention with each query's log-sum-exp of its scaled scores, so that blocks of keys seen one
// after another merge into exactly one softmax over all of them (Ring attention). out: q's shape and dtype;
// lse: [B, heads, S] float32. 2.x: the fused kernels that return it (on CUDA as compat/attention_kernels.h
// chooses; flash on the CPU). 1.13: the math in float32, in blocks of queries.
struct AttentionWithLse {
  at::Tensor out, lse;
};
AttentionWithLse attention_with_lse(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);

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
// Starts the allocator's peak afresh (a rank's next job); nothing on the CPU.
void reset_allocator_peak(const at::Device& device);

// The visible CUDA devices' names and memory, from the runtime a CUDA LibTorch loads; empty without.
struct GpuInfo {
  int index = 0;
  std::string name;
  size_t total_bytes = 0, free_bytes = 0;
};
std::vector<GpuInfo> list_gpus();

// "1.13.1" etc., for logs and --version.
const char* torch_version();

// What this build runs on, for --version and the studio's About box: "LibTorch 2.15.0, CUDA 13.2, NCCL 2.30.7"
// (the CUDA runtime and NCCL that are loaded, as they report themselves), or "LibTorch 1.13.0, CPU".
std::string build_description();
// Whether this build carries CUDA (its runtime is loaded), whether or not a GPU is visible.
bool has_cuda_runtime();

}  // namespace studio::compat

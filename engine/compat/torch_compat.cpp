#include "compat/torch_compat.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupWrapper.hpp>
#include <torch/version.h>
#ifdef STUDIO_WITH_NCCL
#include <c10/cuda/CUDACachingAllocator.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#include <ATen/Context.h>

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <dlfcn.h>

#include <cmath>
#include <cstdlib>

namespace studio::compat {

#if TORCH_VERSION_MAJOR >= 2

at::Tensor float8_view(const at::Tensor& bytes, bool e5m2) {
  return bytes.view(e5m2 ? at::kFloat8_e5m2 : at::kFloat8_e4m3fn);
}

#else

at::Tensor float8_view(const at::Tensor&, bool) { return {}; }

#endif

const char* torch_version() { return TORCH_VERSION; }

namespace {

// Both libraries are loaded with a CUDA LibTorch (whether or not a GPU is present), absent otherwise.
using GetVersion = int (*)(int*);
GetVersion cuda_runtime_version() {
  return reinterpret_cast<GetVersion>(dlsym(RTLD_DEFAULT, "cudaRuntimeGetVersion"));
}

}  // namespace

bool has_cuda_runtime() { return cuda_runtime_version() != nullptr; }

std::string build_description() {
  std::string out = std::string("LibTorch ") + TORCH_VERSION;
  int v = 0;
  auto cudart = cuda_runtime_version();
  if (!cudart || cudart(&v) != 0) return out + ", CPU";
  out += ", CUDA " + std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
  auto nccl = reinterpret_cast<GetVersion>(dlsym(RTLD_DEFAULT, "ncclGetVersion"));
  if (nccl && nccl(&v) == 0)  // since NCCL 2.9: major * 10000 + minor * 100 + patch
    out += ", NCCL " + std::to_string(v / 10000) + "." + std::to_string(v % 10000 / 100) + "." + std::to_string(v % 100);
  return out;
}

std::optional<DeviceMemory> device_memory(const at::Device& device) {
  if (!device.is_cuda()) return std::nullopt;
  using MemGetInfo = int (*)(size_t*, size_t*);
  static const auto mem_get_info = reinterpret_cast<MemGetInfo>(dlsym(RTLD_DEFAULT, "cudaMemGetInfo"));
  if (!mem_get_info) return std::nullopt;
  const auto* guard = c10::impl::getDeviceGuardImpl(at::kCUDA);
  const at::Device previous = guard->exchangeDevice(device);
  DeviceMemory m;
  const int status = mem_get_info(&m.free_bytes, &m.total_bytes);
  guard->setDevice(previous);
  if (status != 0) return std::nullopt;
  return m;
}

std::optional<AllocatorStats> allocator_stats(const at::Device& device) {
#ifdef STUDIO_WITH_NCCL
  if (!device.is_cuda()) return std::nullopt;
  // Index 0 of each stat array is the aggregate over pool kinds (StatType::AGGREGATE in every 2.x).
  const auto s = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
  AllocatorStats a;
  a.allocated = size_t(s.allocated_bytes[0].current);
  a.reserved = size_t(s.reserved_bytes[0].current);
  a.peak = size_t(s.allocated_bytes[0].peak);
  return a;
#else
  (void)device;
  return std::nullopt;
#endif
}

void reset_allocator_peak(const at::Device& device) {
#ifdef STUDIO_WITH_NCCL
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
#else
  (void)device;
#endif
}

std::vector<GpuInfo> list_gpus() {
  std::vector<GpuInfo> out;
  if (!at::hasCUDA()) return out;
  // cudaDeviceProp starts with `char name[256]` in every CUDA release; the rest of its layout varies, so
  // it is read into a buffer larger than any release's struct. CUDA 12 renamed the call (_v2).
  using GetProps = int (*)(void*, int);
  auto get = reinterpret_cast<GetProps>(dlsym(RTLD_DEFAULT, "cudaGetDeviceProperties_v2"));
  if (!get) get = reinterpret_cast<GetProps>(dlsym(RTLD_DEFAULT, "cudaGetDeviceProperties"));
  for (int i = 0; i < int(at::getNumGPUs()); ++i) {
    GpuInfo g;
    g.index = i;
    std::vector<char> props(16384, 0);
    g.name = get && get(props.data(), i) == 0 ? std::string(props.data()) : "CUDA device " + std::to_string(i);
    if (auto m = device_memory(at::Device(at::kCUDA, int8_t(i)))) {
      g.total_bytes = m->total_bytes;
      g.free_bytes = m->free_bytes;
    }
    out.push_back(g);
  }
  return out;
}

namespace {

c10::intrusive_ptr<c10d::ProcessGroupGloo> make_gloo(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                     std::chrono::milliseconds timeout, const std::string& host) {
  auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
  opts->devices.push_back(host.empty() ? c10d::ProcessGroupGloo::createDefaultDevice()
                                       : c10d::ProcessGroupGloo::createDeviceForHostname(host));
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, opts);
}

c10::intrusive_ptr<CommBackend> make_plain(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                           const at::Device& device, std::chrono::milliseconds timeout,
                                           const std::string& host) {
  c10::intrusive_ptr<CommBackend> backend;
#ifdef STUDIO_WITH_NCCL
  if (device.is_cuda()) {
    auto opts = c10d::ProcessGroupNCCL::Options::create();
    opts->timeout = timeout;
    auto nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, opts);
    nccl->setBoundDeviceId(device);  // one communicator, for this rank's GPU, made now rather than lazily
    nccl->eagerConnectSingleDevice(device);
    backend = nccl;
  }
#endif
  if (!backend) backend = make_gloo(store, rank, size, timeout, host);
  return backend;
}

}  // namespace

bool collective_checks_enabled() {
  const char* v = std::getenv("TORCH_DISTRIBUTED_DEBUG");
  return v && std::string(v) == "DETAIL";
}

CommBackends make_comm_backends(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                const at::Device& device, std::chrono::milliseconds timeout, const std::string& host) {
  auto backend = make_plain(store, rank, size, device, timeout, host);
  if (!collective_checks_enabled()) return {backend, backend};
  auto prefixed = [&](const char* p) { return c10::make_intrusive<c10d::PrefixStore>(p, store); };
  auto checker = make_gloo(prefixed("checker/"), rank, size, timeout, host);
  return {c10::make_intrusive<c10d::ProcessGroupWrapper>(backend, checker),
          make_plain(prefixed("peers/"), rank, size, device, timeout, host)};
}

PeerWork post_peer_batch(CommBackend& backend, const std::vector<PeerTransfer>& transfers) {
  PeerWork out;
  out.buffers.reserve(transfers.size());  // c10d keeps references into these vectors
#if TORCH_VERSION_MAJOR >= 2
  const bool coalesce = backend.supportsCoalescing();
  if (coalesce) backend.startCoalescing();
#endif
  // One tag for all: between a pair of ranks, transfers match in the order they are posted.
  for (const auto& t : transfers) {
    out.buffers.push_back({t.tensor});
    auto w = t.send ? backend.send(out.buffers.back(), t.peer, 0) : backend.recv(out.buffers.back(), t.peer, 0);
    if (w) out.work.push_back(w);
  }
#if TORCH_VERSION_MAJOR >= 2
  if (coalesce)
    if (auto w = backend.endCoalescing()) out.work.push_back(w);
#endif
  return out;
}

void allow_tf32(bool allow) {
  at::globalContext().setAllowTF32CuBLAS(allow);
  at::globalContext().setAllowTF32CuDNN(allow);
}

at::Tensor to_device_async(const at::Tensor& t, const at::Device& device) {
  if (!device.is_cuda()) return t.to(device);
  return t.pin_memory().to(device, /*non_blocking=*/true);
}

void synchronize(const at::Device& device) {
  if (device.is_cuda()) c10::impl::getDeviceGuardImpl(at::kCUDA)->getStream(device).synchronize();
}

void bind_device(const at::Device& device) {
  if (device.is_cuda()) c10::impl::getDeviceGuardImpl(at::kCUDA)->setDevice(device);
}

}  // namespace studio::compat

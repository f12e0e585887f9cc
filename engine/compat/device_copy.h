// A copy into device memory on a stream of its own (CUDA), so that it overlaps what the current stream computes:
// it starts once the current stream's queued work is done (that work may still read the destination), and wait()
// makes the current stream wait for it, without holding up the host. Elsewhere (the CPU) the copy is made at start.
#pragma once
#include <memory>

#include <ATen/core/Tensor.h>

namespace c10 {
class Event;
}

namespace studio::compat {

class DeviceCopy {
 public:
  // `from` in pinned host memory (or on the device) for the copy to run apart from the host.
  static DeviceCopy start(const at::Tensor& to, const at::Tensor& from);
  void wait();

 private:
  at::Device device_ = at::kCPU;
  std::shared_ptr<c10::Event> done_;  // recorded on the copy's stream; none on the CPU
};

}  // namespace studio::compat

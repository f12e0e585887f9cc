#include "models/offloaded_blocks.h"

namespace studio::models {

void OffloadedBlocks::keep(size_t, const std::vector<at::Tensor>& tensors) {
  layouts_.emplace_back(tensors, 1);
  auto& layout = layouts_.back();
  if (layout.empty()) {
    host_.emplace_back();
    return;
  }
  auto host = layout.pack().to(at::kCPU);
  host_.push_back(device_.is_cuda() ? host.pin_memory() : host);
  layout.release();
}

void OffloadedBlocks::before(size_t block) {
  layouts_.at(block).bind(host_.at(block).to(at::TensorOptions().device(device_), /*non_blocking=*/true));
}

void OffloadedBlocks::after(size_t block) { layouts_.at(block).release(); }

}  // namespace studio::models

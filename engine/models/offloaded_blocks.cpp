#include "models/offloaded_blocks.h"

#include "compat/device_copy.h"

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
  if (!copied_) {
    std::vector<int64_t> bytes;
    for (const auto& h : host_) bytes.push_back(h.defined() ? h.numel() : 0);
    copied_.emplace(bytes, at::TensorOptions().device(device_), [this](size_t b, const at::Tensor& into) {
      auto copy = std::make_shared<compat::DeviceCopy>(compat::DeviceCopy::start(into, host_.at(b)));
      return [copy] { copy->wait(); };
    }, ahead_);
  }
  layouts_.at(block).bind(copied_->take(block));
}

void OffloadedBlocks::after(size_t block) { layouts_.at(block).release(); }

}  // namespace studio::models

#include "models/block_layout.h"

#include <algorithm>

#include <ATen/ops/zeros.h>

namespace studio::models {

namespace {

constexpr int64_t kAlign = 64;  // each tensor's place, for any dtype and vector loads

int64_t aligned(int64_t n, int64_t to) { return (n + to - 1) / to * to; }

}  // namespace

BlockLayout::BlockLayout(std::vector<at::Tensor> tensors, int64_t multiple) {
  for (auto& t : tensors) {
    places_.push_back({t, bytes_, t.sizes().vec()});
    bytes_ = aligned(bytes_ + int64_t(t.numel() * t.element_size()), kAlign);
  }
  bytes_ = aligned(bytes_, std::max<int64_t>(multiple, 1));
}

at::Tensor BlockLayout::pack(int64_t first, int64_t count) const {
  const auto device = places_.empty() ? at::Device(at::kCPU) : places_.front().tensor.device();
  auto buffer = at::zeros({count}, at::TensorOptions(at::kByte).device(device));
  for (const auto& p : places_) {
    const int64_t size = int64_t(p.tensor.numel() * p.tensor.element_size());
    const int64_t from = std::max(p.offset, first), to = std::min(p.offset + size, first + count);
    if (from >= to) continue;
    const auto bytes = p.tensor.contiguous().reshape({-1}).view(at::kByte);
    buffer.narrow(0, from - first, to - from).copy_(bytes.narrow(0, from - p.offset, to - from));
  }
  return buffer;
}

void BlockLayout::bind(const at::Tensor& buffer) {
  for (auto& p : places_) {
    const int64_t item = int64_t(p.tensor.element_size());
    std::vector<int64_t> strides(p.sizes.size(), 1);
    for (int64_t d = int64_t(p.sizes.size()) - 2; d >= 0; --d) strides[d] = strides[d + 1] * p.sizes[d + 1];
    p.tensor.set_(buffer.storage(), (buffer.storage_offset() + p.offset) / item, p.sizes, strides);
  }
}

void BlockLayout::release() {
  for (auto& p : places_) p.tensor.set_();
}

}  // namespace studio::models

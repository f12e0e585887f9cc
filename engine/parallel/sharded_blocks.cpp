#include "parallel/sharded_blocks.h"

namespace studio::parallel {

void ShardedBlocks::keep(size_t, const std::vector<at::Tensor>& tensors) {
  const int64_t n = group_.size();
  layouts_.emplace_back(tensors, n * 64);
  auto& layout = layouts_.back();
  if (layout.empty()) {
    shards_.emplace_back();
    return;
  }
  const int64_t part = layout.bytes() / n;
  shards_.push_back(layout.pack(group_.rank() * part, part));
  layout.release();
}

void ShardedBlocks::before(size_t block) {
  if (!gathered_) {
    std::vector<int64_t> bytes;
    at::TensorOptions options;
    for (size_t i = 0; i < layouts_.size(); ++i) {
      bytes.push_back(shards_[i].defined() ? layouts_[i].bytes() : 0);
      if (shards_[i].defined()) options = shards_[i].options();
    }
    gathered_.emplace(bytes, options, [this](size_t b, const at::Tensor& into) {
      auto pending = std::make_shared<PendingBatch>(group_.start_all_gather_into(into, shards_.at(b)));
      return [pending] { pending->wait(); };
    }, ahead_);
  }
  layouts_.at(block).bind(gathered_->take(block));
}

void ShardedBlocks::after(size_t block) { layouts_.at(block).release(); }

uint64_t ShardedBlocks::shard_bytes() const {
  uint64_t sum = 0;
  for (const auto& s : shards_)
    if (s.defined()) sum += uint64_t(s.numel());
  return sum;
}

}  // namespace studio::parallel

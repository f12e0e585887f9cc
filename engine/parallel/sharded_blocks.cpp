#include "parallel/sharded_blocks.h"

#include <algorithm>

#include <ATen/ops/empty.h>

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
  largest_ = std::max(largest_, layout.bytes());
}

void ShardedBlocks::before(size_t block) {
  const auto& shard = shards_.at(block);
  // One buffer, as large as the largest block, holds the block that runs: a buffer per call would leave the
  // heap (where dit-worker keeps freed memory) with holes of every block's size, step after step.
  if (!gathered_.defined()) gathered_ = at::empty({largest_}, shard.options());
  const auto whole = gathered_.narrow(0, 0, shard.numel() * group_.size());
  group_.all_gather_into(whole, shard);
  layouts_.at(block).bind(whole);
}

void ShardedBlocks::after(size_t block) { layouts_.at(block).release(); }

uint64_t ShardedBlocks::shard_bytes() const {
  uint64_t sum = 0;
  for (const auto& s : shards_)
    if (s.defined()) sum += uint64_t(s.numel());
  return sum;
}

}  // namespace studio::parallel

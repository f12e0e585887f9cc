#include "parallel/sharded_blocks.h"

#include <ATen/ops/empty.h>

namespace studio::parallel {

ShardedBlocks::ShardedBlocks(const models::DitModel& model, Group& group) : group_(group) {
  const int64_t n = group.size();
  int64_t largest = 0;
  for (size_t i = 0; i < model.num_blocks(); ++i) {
    layouts_.emplace_back(model.block_tensors(i), n * 64);
    auto& layout = layouts_.back();
    if (layout.empty()) {
      shards_.emplace_back();
      continue;
    }
    const int64_t part = layout.bytes() / n;
    shards_.push_back(layout.pack().narrow(0, group.rank() * part, part).clone());
    layout.release();
    largest = std::max(largest, layout.bytes());
  }
  // One buffer, as large as the largest block, holds the block that runs: a buffer per call would leave the
  // heap (where dit-worker keeps freed memory) with holes of every block's size, step after step.
  if (largest > 0) gathered_ = at::empty({largest}, at::TensorOptions(at::kByte).device(model.device()));
}

void ShardedBlocks::before(size_t block) {
  const auto& shard = shards_.at(block);
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

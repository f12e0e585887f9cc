#include "parallel/sharded_blocks.h"

#include <ATen/ops/cat.h>

namespace studio::parallel {

ShardedBlocks::ShardedBlocks(const models::DitModel& model, Group& group) : group_(group) {
  const int64_t n = group.size();
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
  }
}

void ShardedBlocks::before(size_t block) {
  layouts_.at(block).bind(at::cat(group_.all_gather(shards_.at(block)), 0));
}

void ShardedBlocks::after(size_t block) { layouts_.at(block).release(); }

uint64_t ShardedBlocks::shard_bytes() const {
  uint64_t sum = 0;
  for (const auto& s : shards_)
    if (s.defined()) sum += uint64_t(s.numel());
  return sum;
}

}  // namespace studio::parallel

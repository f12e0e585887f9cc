// --shard_weights (FSDP's way, xDiT's fully-sharded mode): each of the N ranks of a group keeps 1/N of every
// block's bytes; a block's are all-gathered before it runs and let go after, so a rank holds its shards and a
// whole block in a buffer kept from block to block (on a GPU two: the next is gathered while one runs,
// models/block_prefetch.h). Given to the model before its blocks load, it takes each block as it loads, so no rank ever
// holds the whole transformer. Gathering moves bytes, so the result equals the one-process one exactly.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "models/block_layout.h"
#include "models/block_prefetch.h"
#include "models/dit_model.h"
#include "parallel/comm.h"

namespace studio::parallel {

class ShardedBlocks final : public models::BlockWeights {
 public:
  // Every rank of `group` makes one; `ahead`: gather the next block while one runs (models/block_prefetch.h).
  ShardedBlocks(Group& group, bool ahead) : group_(group), ahead_(ahead) {}
  void keep(size_t block, const std::vector<at::Tensor>& tensors) override;
  void before(size_t block) override;
  void after(size_t block) override;
  uint64_t shard_bytes() const;  // what this rank keeps of all the blocks

 private:
  Group& group_;
  bool ahead_;
  std::vector<models::BlockLayout> layouts_;
  std::vector<at::Tensor> shards_;  // undefined for a block another PipeFusion stage holds
  std::optional<models::BlockPrefetch> gathered_;  // made at the first call, once every block is kept
};

}  // namespace studio::parallel

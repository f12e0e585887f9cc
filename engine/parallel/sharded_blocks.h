// --shard_weights (FSDP's way, xDiT's fully-sharded mode): each of the N ranks of a group keeps 1/N of every
// block's bytes; a block's are all-gathered just before it runs and let go after, so a rank holds its shards and
// one whole block, in a buffer kept from block to block. Gathering moves bytes, so the result equals the
// one-process one exactly.
#pragma once
#include <cstdint>
#include <vector>

#include "models/block_layout.h"
#include "models/dit_model.h"
#include "parallel/comm.h"

namespace studio::parallel {

class ShardedBlocks final : public models::BlockWeights {
 public:
  // Takes the blocks `model` holds now and keeps this rank's shard of each; every rank of `group` makes one.
  ShardedBlocks(const models::DitModel& model, Group& group);
  void before(size_t block) override;
  void after(size_t block) override;
  uint64_t shard_bytes() const;  // what this rank keeps of all the blocks

 private:
  Group& group_;
  std::vector<models::BlockLayout> layouts_;
  std::vector<at::Tensor> shards_;  // undefined for a block another PipeFusion stage holds
  at::Tensor gathered_;             // the block that runs, whole
};

}  // namespace studio::parallel

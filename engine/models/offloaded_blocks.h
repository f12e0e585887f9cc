// --offload blocks: the blocks' weights kept in host memory (pinned where a GPU copies from it) and copied to the
// model's device before each block runs, let go after: the device holds two blocks, the one that runs and the
// next, copied in while it runs on a stream of its own (models/block_prefetch.h). Given to the model before its
// blocks load, it takes each block as it loads, so the device never holds them all.
#pragma once
#include <optional>
#include <vector>

#include "models/block_layout.h"
#include "models/block_prefetch.h"
#include "models/dit_model.h"

namespace studio::models {

class OffloadedBlocks final : public BlockWeights {
 public:
  explicit OffloadedBlocks(at::Device device) : device_(device) {}  // the model's device
  void keep(size_t block, const std::vector<at::Tensor>& tensors) override;
  void before(size_t block) override;
  void after(size_t block) override;

 private:
  at::Device device_;
  std::vector<BlockLayout> layouts_;
  std::vector<at::Tensor> host_;         // undefined for a block another PipeFusion stage holds
  std::optional<BlockPrefetch> copied_;  // made at the first call, once every block is kept
};

}  // namespace studio::models

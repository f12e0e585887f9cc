// --offload blocks: the blocks' weights kept in host memory (pinned where a GPU copies from it) and copied to the
// model's device before each block runs, let go after: the device holds one block, or on a GPU two, the next
// copied in while one runs on a stream of its own (models/block_prefetch.h). Given to the model before its
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
  // `device`: the model's; `ahead`: copy the next block in while one runs (models/block_prefetch.h).
  OffloadedBlocks(at::Device device, bool ahead) : device_(device), ahead_(ahead) {}
  void keep(size_t block, const std::vector<at::Tensor>& tensors) override;
  void before(size_t block) override;
  void after(size_t block) override;

 private:
  at::Device device_;
  bool ahead_;
  std::vector<BlockLayout> layouts_;
  std::vector<at::Tensor> host_;         // undefined for a block another PipeFusion stage holds
  std::optional<BlockPrefetch> copied_;  // made at the first call, once every block is kept
};

}  // namespace studio::models

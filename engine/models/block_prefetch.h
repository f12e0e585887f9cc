// A block's weights, whole, in a buffer kept from block to block. Fetching ahead (on a GPU, where the transfers run
// beside the compute: NCCL's stream, a copy stream), the block that runs and the next are in two buffers: the
// weights of block i are waited for just before it runs (fetched by the call before, or now), and the next block
// this rank holds is started into the other buffer, to arrive while block i computes (--shard_weights gathers it,
// --offload blocks copies it in). On the CPU the ranks' compute fills the cores and a transfer ahead only competes
// with it (measured slower, docs/memory.md): one buffer, each block fetched as it runs. Every rank of a group
// fetches the same blocks in the same order: a block skipped after its fetch started (a step cache reusing the rest
// of a call) is waited for and let go.
#pragma once
#include <functional>
#include <optional>
#include <vector>

#include <ATen/core/Tensor.h>

namespace studio::models {

class BlockPrefetch {
 public:
  using Wait = std::function<void()>;
  // Starts filling `into` (uint8, the block's bytes) with block `block`'s weights; returns what waits for them.
  using Start = std::function<Wait(size_t block, const at::Tensor& into)>;
  // `bytes[i]`: block i's, 0 for a block another PipeFusion stage holds; the buffers, of the largest, on `options`.
  // `ahead`: fetch the next block while one runs (plan/parallel.cpp counts the buffers alike).
  BlockPrefetch(std::vector<int64_t> bytes, at::TensorOptions options, Start start, bool ahead);
  // Block `block`'s bytes, whole; fetching ahead, the next held block's fetch started.
  at::Tensor take(size_t block);
  // A fetch still on its way (the rest of a call a step cache reused, a cancelled run, Wan2.2's expert switch) is
  // waited for first: its buffer goes back to the allocator, whose next user must not be written into.
  ~BlockPrefetch();
  BlockPrefetch(const BlockPrefetch&) = delete;
  BlockPrefetch& operator=(const BlockPrefetch&) = delete;

 private:
  struct InFlight {
    size_t block;
    int buffer;
    Wait wait;
  };
  at::Tensor in(int buffer, size_t block) const { return buffers_[buffer].narrow(0, 0, bytes_.at(block)); }
  std::vector<int64_t> bytes_;
  Start start_;
  bool ahead_;
  at::Tensor buffers_[2];  // the second only fetching ahead
  std::optional<InFlight> next_;
};

}  // namespace studio::models

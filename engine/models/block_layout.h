// A block's tensors laid out in one byte buffer, so that its weights can live elsewhere between calls (a shard
// on each rank, host memory) and be put back whole just before the block runs: bind() makes every tensor a view
// of its place in a buffer, release() lets the memory go. The tensors are the model's own handles, so the
// model sees whatever they are bound to.
#pragma once
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

namespace studio::models {

class BlockLayout {
 public:
  // `multiple`: the buffer's size is padded to a multiple of it (a shard per rank of equal size).
  BlockLayout(std::vector<at::Tensor> tensors, int64_t multiple);
  bool empty() const { return places_.empty(); }
  int64_t bytes() const { return bytes_; }
  // The tensors' current values in a fresh buffer, uint8 [bytes()], on their device; or only bytes
  // [first, first + count) of it, without making the whole (a rank's shard).
  at::Tensor pack() const { return pack(0, bytes_); }
  at::Tensor pack(int64_t first, int64_t count) const;
  void bind(const at::Tensor& buffer);
  void release();

 private:
  struct Place {
    at::Tensor tensor;
    int64_t offset = 0;  // bytes into the buffer
    std::vector<int64_t> sizes;
  };
  std::vector<Place> places_;
  int64_t bytes_ = 0;
};

}  // namespace studio::models

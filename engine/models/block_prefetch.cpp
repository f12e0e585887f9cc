#include "models/block_prefetch.h"

#include <algorithm>

#include <ATen/ops/empty.h>

namespace studio::models {

BlockPrefetch::BlockPrefetch(std::vector<int64_t> bytes, at::TensorOptions options, Start start, bool ahead)
    : bytes_(std::move(bytes)), start_(std::move(start)), ahead_(ahead) {
  const int64_t largest = bytes_.empty() ? 0 : *std::max_element(bytes_.begin(), bytes_.end());
  for (int i = 0; i < (ahead_ ? 2 : 1); ++i) buffers_[i] = at::empty({largest}, options.dtype(at::kByte));
}

BlockPrefetch::~BlockPrefetch() {
  if (!next_) return;
  try {
    next_->wait();
  } catch (...) {  // a failed collective: the run is failing already, with its own error
  }
}

at::Tensor BlockPrefetch::take(size_t block) {
  int buffer = 0;
  if (next_ && next_->block == block) {
    buffer = next_->buffer;
    next_->wait();
  } else {
    if (next_) next_->wait();  // fetched for nothing: its buffer is free once it has arrived
    start_(block, in(buffer, block))();
  }
  next_.reset();
  const size_t following = block + 1;
  if (ahead_ && following < bytes_.size() && bytes_[following] > 0)
    next_ = InFlight{following, 1 - buffer, start_(following, in(1 - buffer, following))};
  return in(buffer, block);
}

}  // namespace studio::models

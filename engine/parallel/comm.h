// One group of ranks for one parallel dimension, over a c10d process group (Gloo on CPU, NCCL on CUDA).
// Every call counts the bytes this rank sends and receives, per kind of collective, for the progress
// reports.
//
// NCCL's rules are kept here, so that a broken one fails on the CPU too (docs/design.md, "NCCL's rules"):
// every tensor must be on the group's device (NCCL rejects host tensors; a tensor on another GPU hangs);
// point-to-point transfers exist only as batches, posted as one coalesced group on NCCL (a send and a
// receive posted one by one deadlock once a message outgrows NCCL's buffers).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "compat/torch_compat.h"

namespace studio::parallel {

enum class CommKind { AllGather, AllToAll, PointToPoint, Broadcast, Count };
const char* comm_kind_name(CommKind k);

struct Traffic {
  std::array<uint64_t, size_t(CommKind::Count)> sent{}, received{};
  uint64_t total_sent() const;
  uint64_t total_received() const;
};

// One transfer of a point-to-point batch: `tensor` goes to `peer` (send) or is filled from it (receive).
// Between a pair of ranks, sends and receives match in the order they are posted.
struct PeerOp {
  enum Kind { Send, Recv } kind;
  at::Tensor tensor;
  int peer;
};

// A batch in flight; wait() before reading what it receives or reusing what it sends.
class PendingBatch {
 public:
  PendingBatch() = default;
  explicit PendingBatch(compat::PeerWork work) : work_(std::move(work)) {}
  void wait();

 private:
  compat::PeerWork work_;
};

class Group {
 public:
  Group() = default;  // a group of one: every call is local
  Group(compat::CommBackends backends, int rank, int size, const at::Device& device, Traffic* traffic);
  // Out of line: the process group's type is complete only in comm.cpp.
  Group(const Group&);
  Group& operator=(const Group&);
  ~Group();

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Every rank's tensor (all of one shape), in group order.
  std::vector<at::Tensor> all_gather(const at::Tensor& t);
  // The same into `out` (contiguous, size() x t's elements, rank i's at i x t.numel()): a buffer the caller
  // keeps from call to call instead of fresh ones.
  void all_gather_into(const at::Tensor& out, const at::Tensor& t) { start_all_gather_into(out, t).wait(); }
  // The same, started: `out` is filled once wait() returns (on CUDA, for the work the current stream queues after).
  PendingBatch start_all_gather_into(const at::Tensor& out, const at::Tensor& t);
  // t's dim 0 has size() parts; part i goes to rank i. Returns the parts received, dim 0 by source rank.
  at::Tensor all_to_all(const at::Tensor& t);
  void broadcast(at::Tensor& t, int root);
  // Posts every send and receive of `ops` as one batch (what torch's batch_isend_irecv does).
  PendingBatch start(std::vector<PeerOp> ops);
  void run(std::vector<PeerOp> ops) { start(std::move(ops)).wait(); }
  // Neighbours in group order: sends `to_prev` to rank - 1 and `to_next` to rank + 1 while receiving
  // `from_prev` and `from_next` from them; the first and last ranks skip the side they lack (and leave
  // that buffer as it is). Every rank of the group calls it.
  void neighbours(const at::Tensor& to_prev, const at::Tensor& to_next, at::Tensor& from_prev, at::Tensor& from_next);

 private:
  // Throws (an internal error naming the call) when `t` is not on the group's device.
  void check(const at::Tensor& t, const char* call) const;
  compat::CommBackends pg_;
  int rank_ = 0, size_ = 1;
  at::Device device_ = at::kCPU;
  Traffic* traffic_ = nullptr;
};

}  // namespace studio::parallel

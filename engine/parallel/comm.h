// One group of ranks for one parallel dimension, over a c10d process group (Gloo on CPU, NCCL on CUDA).
// Every call counts the bytes this rank sends and receives, per kind of collective, for the progress
// reports.
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

class Group {
 public:
  Group() = default;  // a group of one: every call is local
  Group(c10::intrusive_ptr<compat::CommBackend> pg, int rank, int size, Traffic* traffic);
  // Out of line: the process group's type is complete only in comm.cpp.
  Group(const Group&);
  Group& operator=(const Group&);
  ~Group();

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Every rank's tensor (all of one shape), in group order.
  std::vector<at::Tensor> all_gather(const at::Tensor& t);
  // t's dim 0 has size() parts; part i goes to rank i. Returns the parts received, dim 0 by source rank.
  at::Tensor all_to_all(const at::Tensor& t);
  // Sends `out` to rank `to` while receiving into `in` from rank `from` (both may be in flight at once).
  void exchange(const at::Tensor& out, int to, at::Tensor& in, int from);
  // Neighbours in group order: sends `to_prev` to rank - 1 and `to_next` to rank + 1 while receiving
  // `from_prev` and `from_next` from them; the first and last ranks skip the side they lack (and leave
  // that buffer as it is). Every rank of the group calls it.
  void neighbours(const at::Tensor& to_prev, const at::Tensor& to_next, at::Tensor& from_prev, at::Tensor& from_next);
  void broadcast(at::Tensor& t, int root);
  // Point to point, matched in order between a pair of ranks.
  void send(const at::Tensor& t, int to);
  void recv(at::Tensor& t, int from);

 private:
  c10::intrusive_ptr<compat::CommBackend> pg_;
  int rank_ = 0, size_ = 1;
  Traffic* traffic_ = nullptr;
  int tag_ = 0;       // exchange()'s tags
  int p2p_tag_ = 1 << 20;  // send()/recv() use one fixed tag: pairs stay in order
};

}  // namespace studio::parallel

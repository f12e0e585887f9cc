#include "parallel/comm.h"

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <ATen/ops/empty_like.h>

namespace studio::parallel {

const char* comm_kind_name(CommKind k) {
  switch (k) {
    case CommKind::AllGather: return "all_gather";
    case CommKind::AllToAll: return "all_to_all";
    case CommKind::PointToPoint: return "send_recv";
    case CommKind::Broadcast: return "broadcast";
    case CommKind::Count: break;
  }
  return "?";
}

uint64_t Traffic::total_sent() const {
  uint64_t s = 0;
  for (auto v : sent) s += v;
  return s;
}

uint64_t Traffic::total_received() const {
  uint64_t s = 0;
  for (auto v : received) s += v;
  return s;
}

Group::Group(c10::intrusive_ptr<compat::CommBackend> pg, int rank, int size, Traffic* traffic)
    : pg_(std::move(pg)), rank_(rank), size_(size), traffic_(traffic) {}
Group::Group(const Group&) = default;
Group& Group::operator=(const Group&) = default;
Group::~Group() = default;

namespace {

uint64_t bytes(const at::Tensor& t) { return uint64_t(t.numel()) * t.element_size(); }

}  // namespace

std::vector<at::Tensor> Group::all_gather(const at::Tensor& t) {
  if (size_ == 1) return {t};
  std::vector<at::Tensor> in{t.contiguous()};
  std::vector<std::vector<at::Tensor>> out(1);
  for (int i = 0; i < size_; ++i) out[0].push_back(at::empty_like(in[0]));
  pg_->allgather(out, in)->wait();
  if (traffic_) {
    traffic_->sent[size_t(CommKind::AllGather)] += bytes(t) * uint64_t(size_ - 1);
    traffic_->received[size_t(CommKind::AllGather)] += bytes(t) * uint64_t(size_ - 1);
  }
  return out[0];
}

at::Tensor Group::all_to_all(const at::Tensor& t) {
  if (size_ == 1) return t;
  at::Tensor in = t.contiguous();
  at::Tensor out = at::empty_like(in);
  std::vector<int64_t> counts;  // equal parts
  pg_->alltoall_base(out, in, counts, counts)->wait();
  if (traffic_) {
    const uint64_t part = bytes(t) / uint64_t(size_);
    traffic_->sent[size_t(CommKind::AllToAll)] += part * uint64_t(size_ - 1);
    traffic_->received[size_t(CommKind::AllToAll)] += part * uint64_t(size_ - 1);
  }
  return out;
}

void Group::exchange(const at::Tensor& out, int to, at::Tensor& in, int from) {
  std::vector<at::Tensor> send{out.contiguous()}, recv{in};
  const int tag = tag_++;
  auto s = pg_->send(send, to, tag);
  auto r = pg_->recv(recv, from, tag);
  s->wait();
  r->wait();
  if (traffic_) {
    traffic_->sent[size_t(CommKind::PointToPoint)] += bytes(out);
    traffic_->received[size_t(CommKind::PointToPoint)] += bytes(in);
  }
}

void Group::neighbours(const at::Tensor& to_prev, const at::Tensor& to_next, at::Tensor& from_prev,
                       at::Tensor& from_next) {
  if (size_ == 1) return;
  const int tag = tag_++;  // one tag per call on every rank; each pair's two directions are apart anyway
  std::vector<std::vector<at::Tensor>> buffers;
  buffers.reserve(4);
  std::vector<decltype(pg_->send(buffers.emplace_back(), 0, 0))> work;
  buffers.clear();
  auto post = [&](bool send, const at::Tensor& t, int peer) {
    buffers.push_back({send ? t.contiguous() : t});
    work.push_back(send ? pg_->send(buffers.back(), peer, tag) : pg_->recv(buffers.back(), peer, tag));
    if (traffic_) (send ? traffic_->sent : traffic_->received)[size_t(CommKind::PointToPoint)] += bytes(t);
  };
  if (rank_ > 0) {
    post(true, to_prev, rank_ - 1);
    post(false, from_prev, rank_ - 1);
  }
  if (rank_ + 1 < size_) {
    post(true, to_next, rank_ + 1);
    post(false, from_next, rank_ + 1);
  }
  for (auto& w : work) w->wait();
}

void Group::send(const at::Tensor& t, int to) {
  std::vector<at::Tensor> v{t.contiguous()};
  pg_->send(v, to, p2p_tag_)->wait();
  if (traffic_) traffic_->sent[size_t(CommKind::PointToPoint)] += bytes(t);
}

void Group::recv(at::Tensor& t, int from) {
  std::vector<at::Tensor> v{t};
  pg_->recv(v, from, p2p_tag_)->wait();
  if (traffic_) traffic_->received[size_t(CommKind::PointToPoint)] += bytes(t);
}

void Group::broadcast(at::Tensor& t, int root) {
  if (size_ == 1) return;
  std::vector<at::Tensor> v{t};
  c10d::BroadcastOptions opts;
  opts.rootRank = root;
  pg_->broadcast(v, opts)->wait();
  if (traffic_) (rank_ == root ? traffic_->sent : traffic_->received)[size_t(CommKind::Broadcast)] += bytes(t);
}

}  // namespace studio::parallel

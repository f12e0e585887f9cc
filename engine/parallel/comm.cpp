#include "parallel/comm.h"

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>

#include <stdexcept>

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

Group::Group(compat::CommBackends pg, int rank, int size, const at::Device& device, Traffic* traffic)
    : pg_(std::move(pg)), rank_(rank), size_(size), device_(device), traffic_(traffic) {}
Group::Group(const Group&) = default;
Group& Group::operator=(const Group&) = default;
Group::~Group() = default;

namespace {

uint64_t bytes(const at::Tensor& t) { return uint64_t(t.numel()) * t.element_size(); }

}  // namespace

void Group::check(const at::Tensor& t, const char* call) const {
  if (t.device() != device_)
    throw std::logic_error(std::string("internal error: ") + call + " of a tensor on " + t.device().str() +
                           " in a group of " + device_.str() + " (NCCL takes only tensors on the rank's own GPU)");
}

std::vector<at::Tensor> Group::all_gather(const at::Tensor& t) {
  if (size_ == 1) return {t};
  auto out = at::empty({size_ * t.numel()}, t.options());
  all_gather_into(out, t);
  std::vector<at::Tensor> parts;
  for (const auto& part : out.chunk(size_)) parts.push_back(part.view(t.sizes()));
  return parts;
}

PendingBatch Group::start_all_gather_into(const at::Tensor& out, const at::Tensor& t) {
  if (out.numel() != size_ * t.numel() || !out.is_contiguous() || out.scalar_type() != t.scalar_type())
    throw std::logic_error("internal error: all_gather_into a buffer of " + std::to_string(out.numel()) +
                           " elements for " + std::to_string(size_) + " x " + std::to_string(t.numel()));
  if (size_ == 1) {
    out.view(t.sizes()).copy_(t);
    return {};
  }
  check(t, "all_gather");
  check(out, "all_gather");
  compat::PeerWork work;  // the tensors, kept until the gather is waited for
  work.buffers = {{t.contiguous()}, {}};
  for (const auto& part : out.reshape({-1}).chunk(size_)) work.buffers[1].push_back(part.view(t.sizes()));
  std::vector<std::vector<at::Tensor>> parts{work.buffers[1]};
  work.work.push_back(pg_.collectives->allgather(parts, work.buffers[0]));
  if (traffic_) {
    traffic_->sent[size_t(CommKind::AllGather)] += bytes(t) * uint64_t(size_ - 1);
    traffic_->received[size_t(CommKind::AllGather)] += bytes(t) * uint64_t(size_ - 1);
  }
  return PendingBatch(std::move(work));
}

at::Tensor Group::all_to_all(const at::Tensor& t) {
  if (size_ == 1) return t;
  check(t, "all_to_all");
  at::Tensor in = t.contiguous();
  at::Tensor out = at::empty_like(in);
  std::vector<int64_t> counts;  // equal parts
  pg_.collectives->alltoall_base(out, in, counts, counts)->wait();
  if (traffic_) {
    const uint64_t part = bytes(t) / uint64_t(size_);
    traffic_->sent[size_t(CommKind::AllToAll)] += part * uint64_t(size_ - 1);
    traffic_->received[size_t(CommKind::AllToAll)] += part * uint64_t(size_ - 1);
  }
  return out;
}

void Group::broadcast(at::Tensor& t, int root) {
  if (size_ == 1) return;
  check(t, "broadcast");
  std::vector<at::Tensor> v{t};
  c10d::BroadcastOptions opts;
  opts.rootRank = root;
  pg_.collectives->broadcast(v, opts)->wait();
  if (traffic_) (rank_ == root ? traffic_->sent : traffic_->received)[size_t(CommKind::Broadcast)] += bytes(t);
}

PendingBatch Group::start(std::vector<PeerOp> ops) {
  std::vector<compat::PeerTransfer> transfers;
  for (auto& op : ops) {
    const bool send = op.kind == PeerOp::Send;
    check(op.tensor, send ? "send" : "recv");
    if (!op.tensor.is_contiguous()) {
      if (!send) throw std::logic_error("internal error: recv into a non-contiguous tensor");
      op.tensor = op.tensor.contiguous();
    }
    if (traffic_) (send ? traffic_->sent : traffic_->received)[size_t(CommKind::PointToPoint)] += bytes(op.tensor);
    transfers.push_back({send, op.tensor, op.peer});
  }
  return PendingBatch(compat::post_peer_batch(*pg_.peers, transfers));
}

void PendingBatch::wait() {
  for (auto& w : work_.work) w->wait();
  work_ = {};
}

void Group::neighbours(const at::Tensor& to_prev, const at::Tensor& to_next, at::Tensor& from_prev,
                       at::Tensor& from_next) {
  if (size_ == 1) return;
  std::vector<PeerOp> ops;
  if (rank_ > 0) {
    ops.push_back({PeerOp::Send, to_prev, rank_ - 1});
    ops.push_back({PeerOp::Recv, from_prev, rank_ - 1});
  }
  if (rank_ + 1 < size_) {
    ops.push_back({PeerOp::Send, to_next, rank_ + 1});
    ops.push_back({PeerOp::Recv, from_next, rank_ + 1});
  }
  run(std::move(ops));
}

}  // namespace studio::parallel

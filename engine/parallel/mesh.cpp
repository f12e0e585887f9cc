#include "parallel/mesh.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

#include <ATen/ops/zeros.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "plan/error.h"

namespace studio::parallel {

namespace {


// The address of this machine's interface that reaches `peer` (what Gloo must bind to: the host name
// may resolve to 127.0.1.1, which no other machine can reach).
std::string local_address_towards(const std::string& peer, int port) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  if (::getaddrinfo(peer.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 || !res) return "";
  std::string out;
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in self{};
  socklen_t len = sizeof self;
  // connect() on a datagram socket sends nothing; it only picks the route and so the local address.
  if (fd >= 0 && ::connect(fd, res->ai_addr, res->ai_addrlen) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&self), &len) == 0) {
    char ip[INET_ADDRSTRLEN] = {0};
    if (::inet_ntop(AF_INET, &self.sin_addr, ip, sizeof ip)) out = ip;
  }
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(res);
  return out;
}

}  // namespace


Mesh::Mesh() = default;
Mesh::~Mesh() = default;

std::shared_ptr<Mesh> Mesh::single() {
  auto m = std::make_shared<Mesh>();
  return m;
}

Group& Mesh::group(plan::Dim dim) {
  auto it = groups_.find(dim);
  if (it != groups_.end()) return it->second;
  return groups_[dim];  // a dimension of degree 1: a local group
}

std::shared_ptr<Mesh> Mesh::create(const plan::ParallelConfig& cfg, const DistEnv& env, const at::Device& device,
                                   std::chrono::milliseconds timeout) {
  if (cfg.world_size() != env.world_size)
    throw InputError(cfg.describe() + " needs WORLD_SIZE " + std::to_string(cfg.world_size()) + ", but this process was "
                     "started with WORLD_SIZE " + std::to_string(env.world_size));
  auto m = std::make_shared<Mesh>();
  m->cfg_ = cfg;
  m->rank_ = env.rank;
  m->coords_ = plan::coords_of(env.rank, cfg);
  if (env.world_size == 1) return m;

  c10d::TCPStoreOptions opts;
  opts.port = uint16_t(env.master_port);
  opts.isServer = env.rank == 0 && !env.agent_store;  // under torchrun, its agent is the server
  opts.numWorkers = size_t(env.world_size);
  opts.waitWorkers = true;
  opts.timeout = timeout;
  try {
    m->store_ = c10::make_intrusive<c10d::TCPStore>(env.master_addr, opts);
  } catch (const std::exception& e) {
    throw InputError("rank " + std::to_string(env.rank) + ": cannot join the job at " + env.master_addr + ":" +
                     std::to_string(env.master_port) + " (" + e.what() + ")");
  }
  // The agent's store outlives an attempt: a restarted job keeps its keys apart from the last attempt's.
  if (env.agent_store)
    m->store_ = c10::make_intrusive<c10d::PrefixStore>("dit-studio/attempt_" + std::to_string(env.restart_count) + "/",
                                                       m->store_);
  const bool local = env.master_addr == "127.0.0.1" || env.master_addr == "localhost";
  const std::string host = local ? "127.0.0.1" : local_address_towards(env.master_addr, env.master_port);
  // One process group per distinct member list: dimensions with the same members (world, sequence and
  // Ulysses when only Ulysses is set) share it, rather than each holding an NCCL communicator and buffers.
  std::map<std::vector<int>, Group> made;
  auto make = [&](const std::string& name, const std::vector<int>& members) {
    if (auto it = made.find(members); it != made.end()) return it->second;
    std::string key = name;
    for (int r : members) key += "_" + std::to_string(r);
    const int index = int(std::find(members.begin(), members.end(), env.rank) - members.begin());
    auto store = c10::make_intrusive<c10d::PrefixStore>(key + "/", m->store_);
    return made[members] = Group(compat::make_comm_backends(store, index, int(members.size()), device, timeout, host),
                                 index, int(members.size()), device, &m->traffic_);
  };
  std::vector<int> all(size_t(env.world_size));
  for (int i = 0; i < env.world_size; ++i) all[size_t(i)] = i;
  m->world_ = make("world", all);
  // Every rank creates its groups in this same order; each group connects only its members.
  const std::pair<plan::Dim, const char*> dims[] = {{plan::Dim::Data, "data"},         {plan::Dim::Cfg, "cfg"},
                                                    {plan::Dim::PipeFusion, "pipefusion"}, {plan::Dim::Ring, "ring"},
                                                    {plan::Dim::Ulysses, "ulysses"}, {plan::Dim::Sequence, "sequence"}};
  for (auto [dim, name] : dims) {
    auto members = plan::group_of(env.rank, dim, cfg);
    if (members.size() > 1) m->groups_[dim] = make(name, members);
  }
  // --shard_weights' group (the same group as the sequence's when there is no CFG parallelism).
  if (cfg.shard_weights)
    if (auto members = plan::group_of(env.rank, plan::Dim::Replica, cfg); members.size() > 1)
      m->groups_[plan::Dim::Replica] = make("replica", members);
  // No rank leaves before every rank has connected every group: a rank that then fails fast (an input
  // check) would close its side of a connection a peer is still completing, and the peer would report a
  // lost connection instead of waiting to be told the real error.
  m->world_.all_gather(at::zeros({1}, at::TensorOptions(at::kFloat).device(device)));
  return m;
}

}  // namespace studio::parallel

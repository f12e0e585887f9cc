// The process-group mesh of one job: a TCPStore rendezvous with the torchrun environment, then one
// group per parallel dimension (data, CFG, PipeFusion, ring, Ulysses, and ring x Ulysses) over it.
#pragma once
#include <chrono>
#include <map>
#include <memory>
#include <string>

#include <ATen/core/Tensor.h>

#include "parallel/comm.h"
#include "parallel/dist_env.h"
#include "plan/parallel.h"

namespace c10d {
class Store;
}

namespace studio::parallel {


class Mesh {
 public:
  // Blocks until every rank has joined (or `timeout` passes: InputError naming the address).
  static std::shared_ptr<Mesh> create(const plan::ParallelConfig& cfg, const DistEnv& env, const at::Device& device,
                                      std::chrono::milliseconds timeout);
  // A mesh of one process: every group is local.
  static std::shared_ptr<Mesh> single();
  Mesh();
  ~Mesh();

  int rank() const { return rank_; }
  int world_size() const { return cfg_.world_size(); }
  const plan::ParallelConfig& config() const { return cfg_; }
  const plan::RankCoords& coords() const { return coords_; }
  Group& group(plan::Dim dim);
  Group& world() { return world_; }
  const Traffic& traffic() const { return traffic_; }

 private:
  plan::ParallelConfig cfg_;
  int rank_ = 0;
  plan::RankCoords coords_;
  c10::intrusive_ptr<c10d::Store> store_;
  Traffic traffic_;
  Group world_;
  std::map<plan::Dim, Group> groups_;
};

}  // namespace studio::parallel

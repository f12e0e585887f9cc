// The process-group mesh of one job: a TCPStore rendezvous with the torchrun environment, then one
// group per parallel dimension (data, CFG, PipeFusion, ring, Ulysses, and ring x Ulysses) over it.
#pragma once
#include <chrono>
#include <map>
#include <memory>
#include <string>

#include <ATen/core/Tensor.h>

#include "parallel/comm.h"
#include "plan/parallel.h"

namespace c10d {
class Store;
}

namespace studio::parallel {

// Who this process is, read from the environment a launcher sets.
struct DistEnv {
  int rank = 0;        // RANK
  int world_size = 1;  // WORLD_SIZE
  int local_rank = 0;  // LOCAL_RANK
  std::string master_addr = "127.0.0.1";  // MASTER_ADDR
  int master_port = 29500;                // MASTER_PORT
  // torchrun's agent serves the store at MASTER_ADDR:MASTER_PORT itself (TORCHELASTIC_USE_AGENT_STORE=True):
  // every rank joins it as a client. TORCHELASTIC_RESTART_COUNT numbers the attempts of a restarted job.
  bool agent_store = false;
  int restart_count = 0;
  // RANK/WORLD_SIZE/LOCAL_RANK (torchrun, dit-launch), else SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID
  // (srun), else OMPI_COMM_WORLD_RANK/_SIZE/_LOCAL_RANK (mpirun); MASTER_ADDR/MASTER_PORT in every
  // case. InputError if malformed.
  static DistEnv from_environment();
};

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

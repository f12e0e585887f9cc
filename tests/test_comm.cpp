// The comm layer keeps NCCL's rules on the CPU too (docs/design.md, "NCCL's rules"): ranks as threads
// over real Gloo sockets.
#include <gtest/gtest.h>

#include <cstdlib>

#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/zeros.h>

#include "parallel/dist_env.h"
#include "plan/error.h"
#include "rank_threads.h"
#include "support.h"

using namespace studio;

namespace {

plan::ParallelConfig ranks(int n) {
  plan::ParallelConfig p;
  p.ulysses_degree = n;
  return p;
}

// c10d's collective checker on, for the groups made in this scope.
struct CollectiveChecks {
  CollectiveChecks() { setenv("TORCH_DISTRIBUTED_DEBUG", "DETAIL", 1); }
  ~CollectiveChecks() { unsetenv("TORCH_DISTRIBUTED_DEBUG"); }
};

}  // namespace

TEST(Comm, MismatchedCollectivesFailOnEveryRankUnderTheChecker) {
  // On NCCL this is a hang (or worse); the checker makes it an error on the CPU.
  CollectiveChecks on;
  auto failures = test::run_ranks(ranks(2), [](int rank, parallel::Mesh& mesh) {
    mesh.world().all_gather(at::zeros({rank == 0 ? 2 : 3}));
  });
  for (const auto& f : failures) EXPECT_TRUE(test::contains(f, "mismatch")) << "rank said: " << f;
}

TEST(Comm, UnevenPointToPointDoesNotUpsetTheChecker) {
  // The middle rank of three talks to two neighbours, the others to one; collectives after that agree.
  CollectiveChecks on;
  auto failures = test::run_ranks(ranks(3), [](int rank, parallel::Mesh& mesh) {
    auto& g = mesh.world();
    at::Tensor above = at::full({4}, -1.0f), below = at::full({4}, -1.0f);
    g.neighbours(at::full({4}, float(rank)), at::full({4}, float(rank)), above, below);
    if (rank > 0 && above[0].item<float>() != float(rank - 1)) throw std::runtime_error("wrong row from above");
    if (rank < 2 && below[0].item<float>() != float(rank + 1)) throw std::runtime_error("wrong row from below");
    const auto all = g.all_gather(at::full({1}, float(rank)));
    for (int r = 0; r < 3; ++r)
      if (all[size_t(r)].item<float>() != float(r)) throw std::runtime_error("wrong gather");
  });
  for (const auto& f : failures) EXPECT_EQ(f, "");
}

TEST(Comm, ARingExchangeIsOneBatchAndOverlapsWork) {
  auto failures = test::run_ranks(ranks(3), [](int rank, parallel::Mesh& mesh) {
    auto& g = mesh.world();
    at::Tensor mine = at::full({1 << 16}, float(rank)), next = at::empty({1 << 16});
    auto pending = g.start({{parallel::PeerOp::Send, mine, (rank + 1) % 3}, {parallel::PeerOp::Recv, next, (rank + 2) % 3}});
    pending.wait();
    if (next[0].item<float>() != float((rank + 2) % 3)) throw std::runtime_error("wrong block");
  });
  for (const auto& f : failures) EXPECT_EQ(f, "");
}

TEST(Comm, ATensorOffTheGroupsDeviceIsAnInternalErrorNotAHang) {
  // NCCL rejects host tensors and hangs on another GPU's; here a tensor on the `meta` device stands in.
  auto failures = test::run_ranks(ranks(2), [](int rank, parallel::Mesh& mesh) {
    const auto elsewhere = at::empty({2}, at::TensorOptions().device(at::kMeta));
    if (rank == 0) mesh.world().all_gather(elsewhere);
    else mesh.world().run({{parallel::PeerOp::Send, elsewhere, 0}});
  });
  EXPECT_TRUE(test::contains(failures[0], "all_gather of a tensor on meta in a group of cpu")) << failures[0];
  EXPECT_TRUE(test::contains(failures[1], "send of a tensor on meta in a group of cpu")) << failures[1];
}

namespace {

// Sets variables for one check and restores the environment after it.
class ScopedEnv {
 public:
  explicit ScopedEnv(const std::vector<std::pair<std::string, std::string>>& vars) {
    for (const char* name : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "SLURM_PROCID",
                             "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_JOB_NODELIST", "SLURM_JOB_ID", "SLURM_NTASKS_PER_NODE", "LOCAL_WORLD_SIZE",
                             "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                             "OMPI_COMM_WORLD_LOCAL_SIZE", "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_RESTART_COUNT"}) {
      if (const char* v = std::getenv(name)) saved_.push_back({name, v});
      ::unsetenv(name);
      cleared_.push_back(name);
    }
    for (const auto& [k, v] : vars) ::setenv(k.c_str(), v.c_str(), 1);
  }
  ~ScopedEnv() {
    for (const auto& name : cleared_) ::unsetenv(name.c_str());
    for (const auto& [k, v] : saved_) ::setenv(k.c_str(), v.c_str(), 1);
  }

 private:
  std::vector<std::pair<std::string, std::string>> saved_;
  std::vector<std::string> cleared_;
};

}  // namespace

// Who a rank is and where the ranks meet, under each launcher, without MASTER_ADDR where a rule gives it.
TEST(DistEnv, each_launchers_variables_and_the_meeting_point) {
  {
    ScopedEnv e({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "1"},
                 {"SLURM_JOB_NODELIST", "gpu[03-05,9],cpu1"}, {"SLURM_JOB_ID", "123456"},
                 {"SLURM_NTASKS_PER_NODE", "2"}});
    const auto d = parallel::DistEnv::from_environment();
    EXPECT_EQ(d.local_world_size, 2);
    EXPECT_EQ(d.rank, 1);
    EXPECT_EQ(d.world_size, 4);
    EXPECT_EQ(d.local_rank, 1);
    EXPECT_EQ(d.master_addr, "gpu03");
    EXPECT_EQ(d.master_port, 29500 + 3456);
  }
  {
    ScopedEnv e({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
    EXPECT_EQ(parallel::DistEnv::from_environment().master_addr, "127.0.0.1");
    EXPECT_EQ(parallel::DistEnv::from_environment().local_world_size, 2);
  }
  {
    ScopedEnv e({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
    EXPECT_TRUE(test::throws_with<InputError>([] { parallel::DistEnv::from_environment(); },
                                              {"MASTER_ADDR is not set", "mpirun -x MASTER_ADDR"}));
  }
  {
    ScopedEnv e({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "node0"}, {"MASTER_PORT", "29400"},
                 {"TORCHELASTIC_USE_AGENT_STORE", "True"}, {"TORCHELASTIC_RESTART_COUNT", "2"}});
    const auto d = parallel::DistEnv::from_environment();
    EXPECT_EQ(d.local_world_size, 1);  // torchrun without LOCAL_WORLD_SIZE: no launcher said
    EXPECT_EQ(d.master_addr, "node0");
    EXPECT_EQ(d.master_port, 29400);
    EXPECT_TRUE(d.agent_store);
    EXPECT_EQ(d.restart_count, 2);
  }
  {
    ScopedEnv e({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "0"}});
    EXPECT_TRUE(test::throws_with<InputError>([] { parallel::DistEnv::from_environment(); },
                                              {"LOCAL_WORLD_SIZE 0", "1 or more"}));
  }
  {
    ScopedEnv e({{"RANK", "2"}, {"WORLD_SIZE", "2"}});
    EXPECT_TRUE(test::throws_with<InputError>([] { parallel::DistEnv::from_environment(); },
                                              {"RANK 2 is not below WORLD_SIZE 2"}));
  }
  // The cores shared among the ranks of a machine, at least one each; OMP_NUM_THREADS wins.
  EXPECT_EQ(parallel::cpu_threads_per_rank(16, 4, nullptr), 4);
  EXPECT_EQ(parallel::cpu_threads_per_rank(2, 3, nullptr), 1);
  EXPECT_EQ(parallel::cpu_threads_per_rank(8, 3, ""), 2);
  EXPECT_EQ(parallel::cpu_threads_per_rank(8, 3, "6"), 0);
  EXPECT_EQ(parallel::first_slurm_host("node7"), "node7");
  EXPECT_EQ(parallel::first_slurm_host("a1,b2"), "a1");
  EXPECT_EQ(parallel::first_slurm_host("n[7]"), "n7");
  EXPECT_TRUE(test::throws_with<InputError>([] { parallel::first_slurm_host("n[]"); }, {"SLURM_JOB_NODELIST", "MASTER_ADDR"}));
  // Slurm's --gpus-per-task shows each rank only its own GPU.
  EXPECT_EQ(parallel::gpu_index(3, 1), 0);
  EXPECT_EQ(parallel::gpu_index(1, 4), 1);
  EXPECT_TRUE(test::throws_with<InputError>([] { parallel::gpu_index(4, 2); }, {"LOCAL_RANK 4 has no GPU", "2 are visible"}));
}

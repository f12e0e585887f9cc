// The comm layer keeps NCCL's rules on the CPU too (docs/design.md, "NCCL's rules"): ranks as threads
// over real Gloo sockets.
#include <gtest/gtest.h>

#include <cstdlib>

#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/zeros.h>

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

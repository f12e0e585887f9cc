// Ranks as threads of the test, each with its own c10d mesh over real Gloo sockets on loopback.
#pragma once
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "parallel/mesh.h"
#include "workers/launch/supervisor.h"

namespace studio::test {

// Runs `body(rank, mesh)` on every rank of `p`; returns what each rank threw ("" where nothing).
inline std::vector<std::string> run_ranks(const plan::ParallelConfig& p,
                                          const std::function<void(int, parallel::Mesh&)>& body) {
  const int world = p.world_size(), port = workers::free_loopback_port();
  std::vector<std::string> failure(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      try {
        parallel::DistEnv env;
        env.rank = r;
        env.world_size = world;
        env.master_port = port;
        auto mesh = parallel::Mesh::create(p, env, at::kCPU, std::chrono::seconds(60));
        body(r, *mesh);
      } catch (const std::exception& e) {
        failure[size_t(r)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  return failure;
}

}  // namespace studio::test

// The step caches on Wan2.1, whose reference (diffusers 0.35.2's WanPipeline) calls the transformer once per
// guidance branch, so a cache keeps two contexts, "uncond" and "cond". First-Block Cache against
// fbcache_wan21 (wan21_tiny, 12 steps, threshold 0.1): how many calls of each step ran every block, and the
// final latents to 1e-3, in one process, Ulysses 2, Ring 3, CFG parallel alone and with Ring 2, each
// context's every change equal to one process's; data parallel equal to the same batch in one process; the
// contexts really apart (a threshold on which the branches decide differently); through dit-launch, its
// summary line and its progress events. TeaCache (TeaCache4Wan2.1: its own sum per branch) and MagCache:
// threshold 0 is the uncached run, and each branch's decisions are one process's in every mix. MagCache was
// run through dit-launch by hand (calibration, then with its ratios, alike under CFG parallelism).
#include <ATen/ops/cat.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "cache/mag_cache.h"
#include "io/weights/tensor_file.h"
#include "models/family_runtime.h"
#include "parallel/parallel_model.h"
#include "pipeline/denoise.h"
#include "plan/family.h"
#include "cache_case.h"
#include "process.h"
#include "rank_threads.h"
#include "tensor_support.h"

using namespace studio;
using test::Args;
using test::MakeCache;
using test::change_gap;
using test::kChangeTolerance;
using test::pattern;

namespace {

const std::string kCase = "fbcache_wan21";
constexpr int kSteps = 12;
// With a context per branch the cached run makes the reference's two calls a step, the uncached one a batch
// of both: equal to rounding only (measured 2.3e-6), an order under the run tolerance's 1e-3.
constexpr double kSplitTolerance = 1e-5;

struct CachedRun {
  at::Tensor latents;
  std::vector<int> full_per_step;
  std::vector<std::vector<bool>> full_calls;   // per context this rank ran: [uncond, cond]
  std::vector<std::vector<double>> changes;
  int cfg_rank = 0;  // under CFG parallelism, the branch this rank runs (0: unconditional)
};

std::string counts(const std::vector<int>& full) {
  std::string s;
  for (int n : full) s += std::to_string(n);
  return s;
}

class WanCaches : public test::CacheCase {
 protected:
  WanCaches() : CacheCase(kCase) {}

  // The 12-step run through a ParallelTransformer on `mesh`, with a context per branch made by `make`.
  CachedRun run(parallel::Mesh& mesh, const MakeCache& make, const pipeline::DenoiseInputs& in) const {
    cache::StepCaches caches;
    if (make) caches.push_back(make()), caches.push_back(make());
    parallel::ParallelTransformer call(*model_, mesh, std::move(caches));
    auto sampler = models::make_sampler(folder_, kSteps, model_->token_grid(in.latents).tokens());
    sampling::SeededNoise unused(0);  // UniPC draws none
    CachedRun r;
    r.cfg_rank = mesh.coords().cfg;
    r.latents = pipeline::denoise(*model_, *sampler, in, &unused, {},
                                  [&](const models::StepInputs& s, const models::Positions& p) { return call(s, p); });
    r.full_per_step = call.full_calls_per_step();
    for (size_t i = 0; i < 2; ++i)
      if (const auto* c = call.cache(i)) r.full_calls.push_back(c->full_calls()), r.changes.push_back(c->changes());
    return r;
  }

  // Each mix against one process: the same count of full calls each step, each branch's context deciding
  // on its own branch's change (a CFG rank holds one branch: its context is that branch's alone).
  void expect_mixes_decide_as_one_process(const MakeCache& make, const at::Tensor& want, const char* what) const {
    const auto one = run(*parallel::Mesh::single(), make, inputs());
    plan::ParallelConfig ulysses, ring, cfg, cfg_ring;
    ulysses.ulysses_degree = 2;
    ring.ring_degree = 3;
    cfg.use_cfg_parallel = true;
    cfg_ring.use_cfg_parallel = true;
    cfg_ring.ring_degree = 2;
    for (const auto& p : {ulysses, ring, cfg, cfg_ring}) {
      std::vector<CachedRun> runs(size_t(p.world_size()));
      const auto failure =
          test::run_ranks(p, [&](int r, parallel::Mesh& mesh) { runs[size_t(r)] = run(mesh, make, inputs()); });
      for (int r = 0; r < p.world_size(); ++r) {
        ASSERT_TRUE(failure[size_t(r)].empty()) << p.describe() << " rank " << r << ": " << failure[size_t(r)];
        const auto& got = runs[size_t(r)];
        EXPECT_EQ(counts(got.full_per_step), counts(one.full_per_step)) << p.describe() << " rank " << r;
        // Under CFG parallelism a rank runs its branch's context alone.
        for (int b = 0; b < (p.use_cfg_parallel ? 1 : 2); ++b) {
          const size_t mine = size_t(p.use_cfg_parallel ? got.cfg_rank : b), theirs = size_t(got.cfg_rank + b);
          EXPECT_EQ(pattern(got.full_calls[mine]), pattern(one.full_calls[theirs])) << p.describe() << " rank " << r;
          EXPECT_LT(change_gap(got.changes[mine], one.changes[theirs]), kChangeTolerance)
              << p.describe() << " rank " << r << " branch " << theirs;
        }
        const double err = test::max_abs_diff(got.latents, want);
        EXPECT_LT(err, test::kRunTolerance) << p.describe() << " rank " << r;
        if (r == 0)
          std::printf("%s %s: full calls per step %s, final_latents max error %.3g\n", what, p.describe().c_str(),
                      counts(got.full_per_step).c_str(), err);
      }
    }
  }

  std::vector<int> golden_counts() const { return g_["full_calls_per_step"].get<std::vector<int>>(); }
};

TEST_F(WanCaches, fbcache_one_process_matches_the_reference) {
  const auto cached = run(*parallel::Mesh::single(), fbcache(g_["threshold"]), inputs());
  EXPECT_EQ(counts(cached.full_per_step), counts(golden_counts()));
  const auto recorded = test::golden_ids(kCase, "full_calls_per_step");
  for (int i = 0; i < kSteps; ++i) EXPECT_EQ(cached.full_per_step[size_t(i)], recorded[i].item<int64_t>());
  const double err = test::max_abs_diff(cached.latents, test::golden_tensor(kCase, "final_latents"));
  std::printf("fbcache wan21 one process: full calls per step %s, final_latents max error %.3g\n",
              counts(cached.full_per_step).c_str(), err);
  EXPECT_LT(err, test::kRunTolerance);
}

TEST_F(WanCaches, fbcache_every_sequence_and_cfg_mix_decides_as_one_process) {
  expect_mixes_decide_as_one_process(fbcache(g_["threshold"]), test::golden_tensor(kCase, "final_latents"),
                                     "fbcache wan21");
}

// Data parallel 2 against the batch of 2 in one process: each branch's context covers both videos.
TEST_F(WanCaches, fbcache_data_parallel_decides_for_each_branch_of_the_whole_batch) {
  const auto make = fbcache(g_["threshold"]);
  const auto one = run(*parallel::Mesh::single(), make, inputs(2));
  plan::ParallelConfig dp;
  dp.data_parallel_degree = 2;
  std::vector<CachedRun> runs(2);
  const auto failure = test::run_ranks(dp, [&](int r, parallel::Mesh& mesh) {
    auto in = inputs(2);
    for (auto* t : {&in.prompt_embeds, &in.negative_prompt_embeds, &in.latents}) *t = t->narrow(0, r, 1);
    runs[size_t(r)] = run(mesh, make, in);
  });
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(failure[size_t(r)].empty()) << "rank " << r << ": " << failure[size_t(r)];
    EXPECT_EQ(counts(runs[size_t(r)].full_per_step), counts(one.full_per_step)) << "rank " << r;
    for (size_t b = 0; b < 2; ++b)
      EXPECT_LT(change_gap(runs[size_t(r)].changes[b], one.changes[b]), kChangeTolerance) << "rank " << r;
    EXPECT_LT(test::max_abs_diff(runs[size_t(r)].latents, one.latents.narrow(0, r, 1)), test::kRunTolerance);
  }
  std::printf("fbcache wan21 batch of 2: full calls per step %s\n", counts(one.full_per_step).c_str());
}

// With every call run (threshold 0), each context measures its own branch's change (here 1 to 4% apart); a
// threshold between the branches' changes at the first call where they part by far more than rounding
// (every earlier change above it, so the run is the same up to there) makes one branch reuse while the
// other runs: one context over both could not.
TEST_F(WanCaches, fbcache_branches_decide_apart) {
  const auto all = run(*parallel::Mesh::single(), fbcache(0), inputs());
  ASSERT_EQ(all.changes.size(), 2u);
  double threshold = -1;
  size_t at = 0;
  double floor = INFINITY;  // the smallest change before call i, over both branches
  for (size_t i = 1; i < size_t(kSteps) && threshold < 0; ++i) {
    const double u = all.changes[0][i], c = all.changes[1][i];
    const double lo = std::min(u, c), hi = std::max(u, c), mid = (lo + hi) / 2;
    if (hi - lo > 1e-3 * hi && mid < floor) threshold = mid, at = i;
    floor = std::min(floor, lo);
  }
  ASSERT_GT(threshold, 0) << "no call where the branches' changes part";
  const auto apart = run(*parallel::Mesh::single(), fbcache(threshold), inputs());
  EXPECT_NE(apart.full_calls[0][at], apart.full_calls[1][at]) << "call " << at << ", threshold " << threshold;
  EXPECT_EQ(apart.full_per_step[at], 1);
  for (size_t b = 0; b < 2; ++b) EXPECT_EQ(apart.changes[b][at], all.changes[b][at]) << "branch " << b;
  std::printf("fbcache wan21 threshold %.4g: at step %zu uncond change %.4g, cond %.4g; full calls per step %s\n",
              threshold, at + 1, all.changes[0][at], all.changes[1][at], counts(apart.full_per_step).c_str());
}

TEST_F(WanCaches, teacache_and_magcache_threshold_zero_is_the_uncached_run) {
  auto mesh = parallel::Mesh::single();
  const auto uncached = run(*mesh, nullptr, inputs());
  EXPECT_LT(test::max_abs_diff(uncached.latents, test::golden_tensor(kCase, "final_latents_uncached")),
            test::kRunTolerance);
  // Every block of the reference's two calls a step: First-Block Cache at 0 runs them too.
  const auto every = run(*mesh, fbcache(0), inputs());
  const double split = test::max_abs_diff(every.latents, uncached.latents);
  std::printf("wan21 two calls a step against one batch of both: max difference %.3g\n", split);
  EXPECT_LT(split, kSplitTolerance);
  const MakeCache mag = [] { return std::make_unique<cache::MagCache>(0, std::vector<double>(kSteps, 1.0)); };
  for (const auto& [name, make] : {std::pair{"TeaCache", teacache(0)}, std::pair{"MagCache", mag}}) {
    const auto cached = run(*mesh, make, inputs());
    EXPECT_EQ(counts(cached.full_per_step), std::string(kSteps, '2')) << name;
    EXPECT_EQ(test::max_abs_diff(cached.latents, every.latents), 0.0) << name;
  }
}

// TeaCache4Wan2.1 keeps a sum per branch, each running its branch's first and last calls (the identity as
// the polynomial: the published one exceeds any threshold on the tiny model's large changes).
TEST_F(WanCaches, teacache_runs_each_branchs_first_and_last_steps) {
  const auto r = run(*parallel::Mesh::single(), teacache(plan::kMaxCacheThreshold, {1.0, 0.0}), inputs());
  for (size_t b = 0; b < 2; ++b) EXPECT_EQ(pattern(r.full_calls[b]), "1" + std::string(kSteps - 2, '0') + "1");
  EXPECT_EQ(counts(r.full_per_step), "2" + std::string(kSteps - 2, '0') + "2");
}

// The published polynomial is fitted on trained models' small changes (see test_step_cache): the identity
// checks the decisions in every mix. The timestep embedding moves by 0.69 to 1.54 a step here (alike in
// both branches: one timestep), and the sums pass 1.65 at every other call with at least 5% to spare.
TEST_F(WanCaches, teacache_every_sequence_and_cfg_mix_decides_as_one_process) {
  const auto make = teacache(1.65, {1.0, 0.0});
  const auto one = run(*parallel::Mesh::single(), make, inputs());
  std::printf("teacache wan21 one process: full calls per step %s\n", counts(one.full_per_step).c_str());
  EXPECT_NE(counts(one.full_per_step), std::string(kSteps, '2'));  // something was reused
  expect_mixes_decide_as_one_process(make, one.latents, "teacache wan21");
}

// MagCache decides from the step alone: both contexts alike, each reusing its own branch's residuals; the
// first fifth of the calls retained, then never more than 2 reuses in a row.
TEST_F(WanCaches, magcache_every_sequence_and_cfg_mix_decides_as_one_process) {
  const MakeCache make = [] { return std::make_unique<cache::MagCache>(100, std::vector<double>(kSteps, 1.0)); };
  const auto one = run(*parallel::Mesh::single(), make, inputs());
  EXPECT_EQ(counts(one.full_per_step), "220020020020");
  expect_mixes_decide_as_one_process(make, one.latents, "magcache wan21");
}

// dit-launch from the prompt and seed: the summary counts calls, the progress events say each step's.
TEST_F(WanCaches, fbcache_through_dit_launch) {
  const auto b = test::golden_json(base_);
  const Args args{"--model", test::golden_case(base_), "--prompt", b["prompt"], "--negative_prompt",
                  b["negative_prompt"], "--seed", std::to_string(int(b["seed"])), "--height",
                  std::to_string(int(b["height"])), "--width", std::to_string(int(b["width"])), "--num_frames",
                  std::to_string(int(b["num_frames"])), "--max_sequence_length",
                  std::to_string(int(b["max_sequence_length"])), "--guidance_scale",
                  std::to_string(double(b["guidance_scale"])), "--num_inference_steps", std::to_string(kSteps),
                  "--use_fbcache", "--cache_threshold", std::to_string(double(g_["threshold"]))};
  int reused = 0;
  std::string per_step;
  for (int n : golden_counts()) reused += 2 - n, per_step += " " + std::to_string(n);
  for (const Args& mix : {Args{}, Args{"--use_cfg_parallel"}}) {
    const std::string out = tmp_.path("wan" + std::to_string(mix.size()) + ".safetensors"),
                      events = tmp_.path("events" + std::to_string(mix.size()) + ".jsonl");
    const auto r = test::run(test::bin("dit-launch"), args + mix + Args{"--save_tensors", out, "--events_log", events},
                             240000);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(test::contains(r.err, "First-Block Cache: " + std::to_string(reused) + " of 24 calls reused the "
                                      "blocks (full calls per step, of 2:" + per_step + ")")) << r.err;
    EXPECT_TRUE(test::contains(r.err, "; the step cache reused " + std::to_string(reused) + " of 24 calls")) << r.err;
    std::map<int, std::string> steps;
    std::istringstream lines(test::read_file(events));
    for (std::string line; std::getline(lines, line);) {
      const auto e = nlohmann::json::parse(line);
      if (e["kind"] != "progress") continue;
      EXPECT_EQ(e["body"]["calls"], 2);
      EXPECT_EQ(e["body"]["full"], e["body"]["full_calls"] == 2);
      steps[e["body"]["rank"]] += std::to_string(int(e["body"]["full_calls"]));
    }
    ASSERT_EQ(steps.size(), mix.empty() ? size_t(1) : size_t(2));
    for (const auto& [rank, seen] : steps) EXPECT_EQ(seen, counts(golden_counts())) << "rank " << rank;
    const double err = test::max_abs_diff(io::TensorFile(out, "t").get("final_latents", 5, ""),
                                          test::golden_tensor(kCase, "final_latents"));
    std::printf("fbcache wan21 through dit-launch%s: final_latents max error %.3g\n", mix.empty() ? "" : " (CFG)", err);
    EXPECT_LT(err, test::kRunTolerance);
  }
}

}  // namespace

// The step caches. First-Block Cache against diffusers 0.35.2 (fbcache_cogvx2b: cogvx2b_tiny, 12 steps,
// threshold 0.44): which calls ran every block, and the final latents to 1e-3, in one process and with
// ranks as threads under Ulysses 2, Ring 3, Ring 5 (padded), Ulysses 2 x CFG parallel (every rank deciding
// on the one-process change); data parallel equal to the one-process run of the same batch; a threshold
// of 0 equal to the uncached run; through dit-launch with its flags, its summary line and its refusals;
// FLUX.1 through the same seam. TeaCache (no reference run exists): a threshold of 0 equal to the
// uncached run, the first and last steps always run, and every mix and data parallel deciding as one
// process does, for CogVideoX (an indicator every sequence rank holds whole) and FLUX.1 (one split by
// rows). MagCache: a calibration run writes the ratios (the same under ring parallelism), a run with them
// follows the rule (retained first fifth, at most 2 reuses in a row) alike in one process and under
// Ulysses, threshold 0 is the uncached run, and bad files are named.
#include <ATen/ops/cat.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "models/family_runtime.h"
#include "parallel/parallel_model.h"
#include "plan/family.h"
#include "plan/mag_ratios.h"
#include "pipeline/denoise.h"
#include "plan/error.h"
#include "plan/families/cogvideox_config.h"
#include "cache_case.h"
#include "process.h"
#include "rank_threads.h"
#include "sampling/scheduler.h"
#include "tensor_support.h"

using namespace studio;
using test::Args;
using test::MakeCache;
using test::change_gap;
using test::kChangeTolerance;
using test::pattern;

namespace {

const std::string kCase = "fbcache_cogvx2b";
constexpr double kMaxThreshold = plan::kMaxCacheThreshold;

struct CachedRun {
  at::Tensor latents;
  std::vector<bool> full_calls;
  std::vector<double> changes;  // the change each call was decided on
};

class StepCaches : public test::CacheCase {
 protected:
  StepCaches() : CacheCase(kCase) {}

  // The 12-step run through a ParallelTransformer on `mesh`, with the cache `make` makes (none: null).
  CachedRun run(parallel::Mesh& mesh, const MakeCache& make, const pipeline::DenoiseInputs& in) const {
    cache::StepCaches caches;
    if (make) caches.push_back(make());
    parallel::ParallelTransformer call(*model_, mesh, std::move(caches));
    sampling::Scheduler sampler(folder_.parts_as<plan::CogVideoXParts>().scheduler, steps_);
    sampling::SeededNoise unused(0);  // DDIM draws none
    CachedRun r;
    r.latents = pipeline::denoise(*model_, sampler, in, &unused, {},
                                  [&](const models::StepInputs& s, const models::Positions& p) { return call(s, p); });
    if (call.cache()) r.full_calls = call.cache()->full_calls(), r.changes = call.cache()->changes();
    return r;
  }

  // Every sequence and CFG mix against the one-process run with the same cache: the same calls ran, each
  // call's change equal to rounding and, among the ranks, to the last bit; the latents equal `want`'s.
  void expect_mixes_decide_as_one_process(const MakeCache& make, const at::Tensor& want, const char* what) const {
    const auto one = run(*parallel::Mesh::single(), make, inputs());
    plan::ParallelConfig ulysses, ring, ring5, ulysses_cfg;
    ulysses.ulysses_degree = 2;
    ring.ring_degree = 3;
    ring5.ring_degree = 5;  // 72 latent tokens in 5 parts: the padded rows are left out of the sums
    ulysses_cfg.ulysses_degree = 2;
    ulysses_cfg.use_cfg_parallel = true;
    for (const auto& p : {ulysses, ring, ring5, ulysses_cfg}) {
      std::vector<CachedRun> runs(size_t(p.world_size()));
      const auto failure =
          test::run_ranks(p, [&](int r, parallel::Mesh& mesh) { runs[size_t(r)] = run(mesh, make, inputs()); });
      for (int r = 0; r < p.world_size(); ++r) {
        ASSERT_TRUE(failure[size_t(r)].empty()) << p.describe() << " rank " << r << ": " << failure[size_t(r)];
        EXPECT_EQ(pattern(runs[size_t(r)].full_calls), pattern(one.full_calls)) << p.describe() << " rank " << r;
        EXPECT_LT(change_gap(runs[size_t(r)].changes, one.changes), kChangeTolerance)
            << p.describe() << " rank " << r;
        for (size_t i = 1; i < runs[size_t(r)].changes.size(); ++i)
          EXPECT_EQ(runs[size_t(r)].changes[i], runs[0].changes[i]) << p.describe() << " rank " << r << " call " << i;
        const double err = test::max_abs_diff(runs[size_t(r)].latents, want);
        EXPECT_LT(err, test::kRunTolerance) << p.describe() << " rank " << r;
        if (r == 0) std::printf("%s %s: calls %s, final_latents max error %.3g\n", what, p.describe().c_str(),
                                pattern(runs[0].full_calls).c_str(), err);
      }
    }
  }

  // Data parallel 2 against the same batch of 2 in one process.
  void expect_data_parallel_decides_for_the_batch(const MakeCache& make, const char* what) const {
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
      EXPECT_EQ(pattern(runs[size_t(r)].full_calls), pattern(one.full_calls)) << "rank " << r;
      EXPECT_LT(change_gap(runs[size_t(r)].changes, one.changes), kChangeTolerance) << "rank " << r;
      EXPECT_LT(test::max_abs_diff(runs[size_t(r)].latents, one.latents.narrow(0, r, 1)), test::kRunTolerance) << "rank " << r;
    }
    std::printf("%s batch of 2: calls %s\n", what, pattern(one.full_calls).c_str());
  }

  std::vector<bool> golden_pattern() const {
    std::vector<bool> out;
    for (int n : g_["full_calls_per_step"]) out.push_back(n == 1);
    return out;
  }
};

TEST_F(StepCaches, fbcache_one_process_matches_the_reference) {
  const auto cached = run(*parallel::Mesh::single(), fbcache(g_["threshold"]), inputs());
  EXPECT_EQ(pattern(cached.full_calls), pattern(golden_pattern()));
  const double err = test::max_abs_diff(cached.latents, test::golden_tensor(kCase, "final_latents"));
  std::printf("fbcache one process: calls %s, final_latents max error %.3g\n", pattern(cached.full_calls).c_str(), err);
  EXPECT_LT(err, test::kRunTolerance);
}

TEST_F(StepCaches, fbcache_threshold_zero_is_the_uncached_run) {
  auto mesh = parallel::Mesh::single();
  const auto cached = run(*mesh, fbcache(0), inputs()), uncached = run(*mesh, nullptr, inputs());
  EXPECT_EQ(pattern(cached.full_calls), std::string(12, '1'));
  EXPECT_TRUE(uncached.full_calls.empty());
  EXPECT_EQ(test::max_abs_diff(cached.latents, uncached.latents), 0.0);
  EXPECT_LT(test::max_abs_diff(uncached.latents, test::golden_tensor(kCase, "final_latents_uncached")),
            test::kRunTolerance);
}

// Each rank holds part of every call; the two sums of the change are added over the call's ranks, so every
// rank decides on the one process's change (to rounding: not a half's, nor a shard's).
TEST_F(StepCaches, fbcache_every_sequence_and_cfg_mix_decides_as_one_process) {
  expect_mixes_decide_as_one_process(fbcache(g_["threshold"]), test::golden_tensor(kCase, "final_latents"), "fbcache");
}

// diffusers keeps one cache context for the whole batch; split among data-parallel groups, the batch
// still decides as one, so each video equals the one-process run of the same job.
TEST_F(StepCaches, fbcache_data_parallel_decides_for_the_whole_batch) {
  expect_data_parallel_decides_for_the_batch(fbcache(g_["threshold"]), "fbcache");
}

TEST_F(StepCaches, fbcache_through_dit_launch_with_its_flags) {
  const std::string c = test::golden_case(base_), file = c + "/golden.safetensors";
  const auto b = test::golden_json(base_);
  const Args args{"--model", c, "--height", std::to_string(int(b["height"])), "--width",
                  std::to_string(int(b["width"])), "--num_frames", std::to_string(int(b["num_frames"])),
                  "--num_inference_steps", "12", "--prompt_embeds", file, "--latents", file, "--use_fbcache",
                  "--cache_threshold", "0.44"};
  for (const Args& mix : {Args{}, Args{"--ring_degree", "2"}}) {
    const std::string out = tmp_.path("fbcache" + std::to_string(mix.size()) + ".safetensors"),
                      events = tmp_.path("events" + std::to_string(mix.size()) + ".jsonl");
    const auto r = test::run(test::bin("dit-launch"), args + mix + Args{"--save_tensors", out, "--events_log", events},
                             180000);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(test::contains(r.err, "First-Block Cache: 9 of 12 calls reused the blocks (full calls: 1 5 10)")) << r.err;
    EXPECT_TRUE(test::contains(r.err, "; the step cache reused 9 of 12 steps")) << r.err;
    // Every rank's progress events say which steps ran every block.
    std::map<int, std::string> steps;
    std::istringstream lines(test::read_file(events));
    for (std::string line; std::getline(lines, line);) {
      const auto e = nlohmann::json::parse(line);
      if (e["kind"] == "progress") steps[e["body"]["rank"]] += e["body"]["full"] ? '1' : '0';
    }
    ASSERT_EQ(steps.size(), mix.empty() ? size_t(1) : size_t(2));
    for (const auto& [rank, seen] : steps) EXPECT_EQ(seen, pattern(golden_pattern())) << "rank " << rank;
    EXPECT_LT(test::max_abs_diff(io::TensorFile(out, "t").get("final_latents", 5, ""),
                                 test::golden_tensor(kCase, "final_latents")),
              test::kRunTolerance);
  }
}

// FLUX.1 through the same seam, with both caches (no reference run with a cache: the uncached one, and the
// one-process decisions under sequence parallelism; TeaCache's indicator is split by rows here).
TEST_F(StepCaches, flux_takes_both_caches) {
  const std::string c = test::golden_case("flux_tiny"), file = c + "/golden.safetensors";
  const Args args{"--model", c, "--height", "64", "--width", "96", "--num_inference_steps", "10",
                  "--prompt_embeds", file, "--latents", file};
  // The run's summary line ("TeaCache: 4 of 10 calls reused ..."), "" when it has none.
  const auto launch = [&](const Args& more, const std::string& out) {
    const auto r = test::run(test::bin("dit-launch"), args + more + Args{"--save_tensors", out}, 180000);
    EXPECT_EQ(r.code, 0) << r.err;
    const auto end = r.err.find(" calls reused the blocks"), at = r.err.rfind("] ", end);
    return end == std::string::npos ? std::string() : r.err.substr(at + 2, r.err.find('\n', end) - at - 2);
  };
  const auto latents = [](const std::string& f) { return io::TensorFile(f, "t").get("final_latents", 3, ""); };
  const std::string plain = tmp_.path("plain.safetensors");
  EXPECT_EQ(launch({}, plain), "");
  for (const auto& [flag, name, threshold, reused] :
       {std::tuple{"--use_fbcache", "First-Block Cache", "0.3", "5 of 10"}, {"--use_teacache", "TeaCache", "0.25", "4 of 10"}}) {
    const std::string zero = tmp_.path("zero.safetensors"), one = tmp_.path("one.safetensors"),
                      ulysses = tmp_.path("ulysses.safetensors");
    EXPECT_EQ(launch({flag, "--cache_threshold", "0"}, zero),
              std::string(name) + ": 0 of 10 calls reused the blocks (full calls: 1 2 3 4 5 6 7 8 9 10)");
    EXPECT_EQ(test::max_abs_diff(latents(zero), latents(plain)), 0.0) << name;
    const std::string summary = launch({flag, "--cache_threshold", threshold}, one);
    EXPECT_TRUE(test::contains(summary, std::string(name) + ": " + reused + " calls")) << summary;
    EXPECT_EQ(launch({flag, "--cache_threshold", threshold, "--ulysses_degree", "2"}, ulysses), summary);
    EXPECT_LT(test::max_abs_diff(latents(ulysses), latents(one)), test::kRunTolerance) << name;
    EXPECT_GT(test::max_abs_diff(latents(one), latents(plain)), 1e-3) << name;  // the reused calls did change it
  }
}

TEST_F(StepCaches, refusals_name_the_flag) {
  const std::string c = test::golden_case(base_);
  const auto launch = [&](const Args& a) {
    return test::run(test::bin("dit-launch"), Args{"--model", c, "--prompt_embeds", c + "/golden.safetensors"} + a,
                     60000);
  };
  auto r = launch({"--cache_threshold", "0.1"});
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(test::contains(r.err, "--cache_threshold: no step cache is on; add --use_fbcache")) << r.err;
  r = launch({"--use_fbcache", "--cache_threshold", "-1"});
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(test::contains(r.err, "--cache_threshold -1")) << r.err;
  EXPECT_TRUE(test::contains(r.err, "First-Block Cache 0.05, TeaCache 0.1 for this model, MagCache 0.12")) << r.err;
  r = launch({"--use_fbcache", "--cache_threshold", "much"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(test::contains(r.err, "--cache_threshold 'much': not a number")) << r.err;
  r = launch({"--use_fbcache", "--pipefusion_parallel_degree", "2"});
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(test::contains(r.err, "--use_fbcache with --pipefusion_parallel_degree 2")) << r.err;
  r = launch({"--use_teacache", "--pipefusion_parallel_degree", "2"});
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(test::contains(r.err, "--use_teacache with --pipefusion_parallel_degree 2")) << r.err;
  r = launch({"--use_teacache", "--use_fbcache"});
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(test::contains(r.err, "--use_fbcache, --use_teacache, --use_magcache: one step cache at a time")) << r.err;
}

TEST_F(StepCaches, teacache_threshold_zero_is_the_uncached_run) {
  auto mesh = parallel::Mesh::single();
  const auto cached = run(*mesh, teacache(0), inputs()), uncached = run(*mesh, nullptr, inputs());
  EXPECT_EQ(pattern(cached.full_calls), std::string(12, '1'));
  EXPECT_EQ(test::max_abs_diff(cached.latents, uncached.latents), 0.0);
}

TEST_F(StepCaches, teacache_always_runs_the_first_and_last_steps) {
  const auto r = run(*parallel::Mesh::single(), teacache(kMaxThreshold), inputs());
  EXPECT_EQ(pattern(r.full_calls), "1" + std::string(10, '0') + "1");
}

// The tiny model's random weights move its timestep embedding far more between 12 steps than a trained
// model's between 50 (changes of 0.6 to 1.1, where the published polynomials, fitted on small changes,
// turn negative): the decisions in parallel are checked with the identity as the polynomial, whose
// sums cross the threshold at calls 2, 5, 8 and 10 with at least 6% to spare.
TEST_F(StepCaches, teacache_every_sequence_and_cfg_mix_decides_as_one_process) {
  const auto make = teacache(1.7, {1.0, 0.0});
  const auto one = run(*parallel::Mesh::single(), make, inputs());
  EXPECT_EQ(pattern(one.full_calls), "101001001011");
  expect_mixes_decide_as_one_process(make, one.latents, "teacache");
}

TEST_F(StepCaches, teacache_data_parallel_decides_for_the_whole_batch) {
  expect_data_parallel_decides_for_the_batch(teacache(1.7, {1.0, 0.0}), "teacache");
}

TEST(MagRatios, are_interpolated_over_the_calls_as_magcache_does) {
  const plan::MagRatios r{"m", "", 0, 0, 5, {2, 3, 4, 5}};
  EXPECT_EQ(plan::mag_ratios_for(r, 5), (std::vector<double>{1, 2, 3, 4, 5}));
  EXPECT_EQ(plan::mag_ratios_for(r, 3), (std::vector<double>{1, 3, 5}));
  // numpy rounds halves to even: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, 3.5 -> 4.
  EXPECT_EQ(plan::mag_ratios_for(r, 9), (std::vector<double>{1, 1, 2, 3, 3, 3, 4, 5, 5}));
}

TEST_F(StepCaches, magcache_calibrates_then_runs_alike_in_every_mix) {
  const std::string c = test::golden_case(base_), file = c + "/golden.safetensors";
  const auto b = test::golden_json(base_);
  const Args args{"--model", c, "--height", std::to_string(int(b["height"])), "--width",
                  std::to_string(int(b["width"])), "--num_frames", std::to_string(int(b["num_frames"])),
                  "--num_inference_steps", "12", "--prompt_embeds", file, "--latents", file};
  const auto launch = [&](const Args& more, const std::string& out) {
    const auto r = test::run(test::bin("dit-launch"), args + more + Args{"--save_tensors", out}, 180000);
    EXPECT_EQ(r.code, 0) << r.err;
    return r.err;
  };
  const auto latents = [](const std::string& f) { return io::TensorFile(f, "t").get("final_latents", 5, ""); };
  const std::string ratios = tmp_.path("ratios.json"), ring_ratios = tmp_.path("ring_ratios.json");
  const std::string plain = tmp_.path("plain.safetensors");
  EXPECT_TRUE(test::contains(launch({"--magcache_calibrate", ratios}, plain),
                             "MagCache: wrote the ratios of 12 steps to " + ratios));
  const auto one = plan::read_mag_ratios(ratios);
  ASSERT_EQ(one.ratios.size(), 11u);
  EXPECT_EQ(one.model, c);
  const auto model = plan::read_model_folder(c);
  EXPECT_EQ(one.variant, model.variant.id);
  EXPECT_EQ(one.blocks, plan::rules_of(model).blocks(model));
  EXPECT_EQ(one.width, plan::rules_of(model).hidden_size(model));
  // Measured over every rank's rows (5 parts of 72 tokens: padded), the same ratios.
  launch({"--magcache_calibrate", ring_ratios, "--ring_degree", "5"}, tmp_.path("ring.safetensors"));
  const auto ring = plan::read_mag_ratios(ring_ratios);
  ASSERT_EQ(ring.ratios.size(), 11u);
  for (size_t i = 0; i < 11; ++i)
    EXPECT_NEAR(ring.ratios[i], one.ratios[i], kChangeTolerance * one.ratios[i]) << "ratio " << i;
  // Threshold 0 reuses nothing: the uncached run.
  const std::string zero = tmp_.path("zero.safetensors");
  EXPECT_TRUE(test::contains(launch({"--use_magcache", "--magcache_ratios", ratios, "--cache_threshold", "0"}, zero),
                             "MagCache: 0 of 12 calls reused the blocks"));
  EXPECT_EQ(test::max_abs_diff(latents(zero), latents(plain)), 0.0);
  // A threshold nothing reaches: the first fifth (2 calls) runs, then never more than 2 reuses in a row.
  const std::string wide = "MagCache: 7 of 12 calls reused the blocks (full calls: 1 2 5 8 11)";
  const std::string a = tmp_.path("a.safetensors"), u = tmp_.path("u.safetensors");
  EXPECT_TRUE(test::contains(launch({"--use_magcache", "--magcache_ratios", ratios, "--cache_threshold", "100"}, a),
                             wide));
  EXPECT_TRUE(test::contains(
      launch({"--use_magcache", "--magcache_ratios", ratios, "--cache_threshold", "100", "--ulysses_degree", "2"}, u),
      wide));
  EXPECT_LT(test::max_abs_diff(latents(u), latents(a)), test::kRunTolerance);
  EXPECT_GT(test::max_abs_diff(latents(a), latents(plain)), 1e-3);
}

TEST_F(StepCaches, magcache_refusals_name_the_flag_and_the_file) {
  const std::string c = test::golden_case(base_);
  const auto launch = [&](const Args& a) {
    return test::run(test::bin("dit-launch"), Args{"--model", c, "--prompt_embeds", c + "/golden.safetensors"} + a,
                     60000);
  };
  auto r = launch({"--use_magcache"});
  EXPECT_EQ(r.code, 2);  // found while validating the job, before anything starts
  EXPECT_TRUE(test::contains(r.err, "--use_magcache needs --magcache_ratios FILE")) << r.err;
  const std::string bad = tmp_.path("bad.json");
  test::write_file(bad, R"({"steps": 4, "ratios": [1.0, 0.9]})");
  r = launch({"--use_magcache", "--magcache_ratios", bad});
  EXPECT_EQ(r.code, 2);  // found while validating the job, before anything starts
  EXPECT_TRUE(test::contains(r.err, bad + ": field 'ratios' = [1.0,0.9] must be a list of 3 numbers")) << r.err;
  test::write_file(bad, R"({"steps": 3, "ratios": [1.0, -2]})");
  r = launch({"--use_magcache", "--magcache_ratios", bad});
  EXPECT_TRUE(test::contains(r.err, "field 'ratios' = -2 is not a positive number")) << r.err;
  // Ratios measured on another kind of model would skip the wrong calls without a word.
  test::write_file(bad, R"({"model": "/elsewhere/flux", "variant": "flux.1-dev", "steps": 3, "ratios": [1.0, 0.9]})");
  r = launch({"--use_magcache", "--magcache_ratios", bad});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(test::contains(r.err, "measured on /elsewhere/flux (flux.1-dev), not on a model like this one (")) << r.err;
  // One variant id covers models of several sizes (Wan2.1 1.3B and 14B): the transformer's shape tells them apart.
  const auto model = plan::read_model_folder(c);
  const auto& rules = plan::rules_of(model);
  const std::string here = model.variant.id + ", " + std::to_string(rules.blocks(model)) + " blocks of width " +
                           std::to_string(rules.hidden_size(model));
  test::write_file(bad, R"({"model": "/elsewhere/big", "variant": ")" + model.variant.id +
                            R"(", "blocks": 40, "width": 5120, "steps": 3, "ratios": [1.0, 0.9]})");
  r = launch({"--use_magcache", "--magcache_ratios", bad});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(test::contains(r.err, "measured on /elsewhere/big (" + model.variant.id +
                                        ", 40 blocks of width 5120), not on a model like this one (" + here + ")"))
      << r.err;
  r = launch({"--use_magcache", "--magcache_ratios", tmp_.path("missing.json")});
  EXPECT_TRUE(test::contains(r.err, "--magcache_ratios: ")) << r.err;
  r = launch({"--use_fbcache", "--magcache_calibrate", tmp_.path("r.json")});
  EXPECT_TRUE(test::contains(r.err, "--magcache_calibrate measures the uncached model")) << r.err;
  r = launch({"--magcache_calibrate", tmp_.path("r.json"), "--pipefusion_parallel_degree", "2"});
  EXPECT_TRUE(test::contains(r.err, "--magcache_calibrate with --pipefusion_parallel_degree 2")) << r.err;
  r = launch({"--use_fbcache", "--use_magcache", "--magcache_ratios", bad});
  EXPECT_TRUE(test::contains(r.err, "one step cache at a time")) << r.err;
}

}  // namespace

// What the step-cache suites (test_step_cache, test_wan_cache) share: a reference case's base model and
// inputs, the cache makers, and the ways of comparing two runs' decisions.
#pragma once
#include <ATen/ops/cat.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cache/first_block_cache.h"
#include "cache/tea_cache.h"
#include "models/family_runtime.h"
#include "pipeline/denoise.h"
#include "plan/family.h"
#include "tensor_support.h"

namespace studio::test {

using MakeCache = std::function<std::unique_ptr<cache::StepCache>()>;

// The largest relative difference between two runs' changes, call by call (the first call has none).
// Parallel and one-process runs round differently (other reduction orders, shard shapes); a change
// computed over half the batch or a shard instead of the whole call is off by about 1e-2.
constexpr double kChangeTolerance = 1e-4;
inline double change_gap(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double gap = 0;
  for (size_t i = 1; i < std::min(a.size(), b.size()); ++i) gap = std::max(gap, std::abs(a[i] - b[i]) / b[i]);
  return gap;
}

// Which calls ran every block, as "1" (ran) and "0" (reused).
inline std::string pattern(const std::vector<bool>& full) {
  std::string s;
  for (bool f : full) s += f ? '1' : '0';
  return s;
}

// A step-cache reference case (golden.json names its base case and step count) and its base model.
class CacheCase : public ::testing::Test {
 protected:
  explicit CacheCase(const std::string& name) : g_(golden_json(name)) {}

  const nlohmann::json g_;
  const std::string base_ = g_["base_case"];
  const int steps_ = g_["num_inference_steps"];
  const plan::ModelFolder folder_ = plan::read_model_folder(golden_case(base_));
  const std::shared_ptr<models::DitModel> model_ = models::load_transformer(folder_, at::kFloat, at::kCPU);
  TempDir tmp_;

  // The base case's inputs; with 2 videos the second starts from other noise, so that the batch's two
  // halves differ.
  pipeline::DenoiseInputs inputs(int videos = 1) const {
    pipeline::DenoiseInputs in;
    const auto rep = [&](const at::Tensor& t) { return at::cat(std::vector<at::Tensor>(size_t(videos), t), 0); };
    in.prompt_embeds = rep(golden_tensor(base_, "prompt_embeds"));
    in.negative_prompt_embeds = rep(golden_tensor(base_, "negative_prompt_embeds"));
    const auto init = golden_tensor(base_, "latents_init");
    in.latents = videos == 1 ? init : at::cat({init, init.flip({-1})}, 0);
    in.guidance_scale = golden_json(base_)["guidance_scale"];
    return in;
  }

  MakeCache fbcache(double threshold) const {
    return [threshold] { return std::make_unique<cache::FirstBlockCache>(threshold); };
  }
  // TeaCache with the model's published polynomial, or with `coefficients`.
  MakeCache teacache(double threshold, std::vector<double> coefficients = {}) const {
    if (coefficients.empty()) coefficients = plan::rules_of(folder_).teacache_coefficients(folder_);
    return [threshold, coefficients, n = steps_] { return std::make_unique<cache::TeaCache>(threshold, coefficients, n); };
  }
};

}  // namespace studio::test

// The cost model's counts of the work that is neither GEMM nor attention (plan::Family::block_costs:
// the operations a block dispatches and the values its elementwise work reads and writes per token) against
// what each family's blocks really do, counted with LibTorch's RecordFunction hooks while the block runs
// on a reference case's model (docs/cost-model.md). A change to a block that moves its work shows here.
#include <gtest/gtest.h>

#include <ATen/record_function.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/full.h>
#include <ATen/ops/randn.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "models/family_runtime.h"
#include "pipeline/denoise.h"
#include "sampling/noise.h"
#include "plan/family.h"
#include "plan/model_folder.h"
#include "tensor_support.h"

namespace studio {
namespace {

// What the operations called while a Count is alive did: the top-level ones only (an op's own inner calls
// are its implementation, LibTorch's to change), and of those that are not a matrix product or attention,
// the values of the per-token tensors they read and wrote (those of at least the Count's `min_numel`
// values: a sample's modulation vectors do not grow with the tokens). Views and no-op conversions move
// nothing.
struct Tally {
  int ops = 0;
  double values = 0;         // in tensors whose last dimension is not `hidden`
  double hidden_values = 0;  // in the feed-forward's hidden tensors (last dimension `hidden`)
};

thread_local Tally* g_tally = nullptr;
thread_local int g_depth = 0;
thread_local int64_t g_min_numel = 0, g_hidden = 0;
thread_local bool g_product = false, g_out_variant = false;
thread_local std::vector<at::Tensor> g_inputs;

// An allocation: it reads and writes nothing.
bool is_allocation(const char* name) { return !std::strncmp(name, "aten::empty", std::strlen("aten::empty")); }

bool is_product(const char* name) {
  for (const char* p : {"aten::linear", "aten::matmul", "aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm",
                        "aten::scaled_dot_product_attention", "aten::_scaled_dot_product"})
    if (!std::strncmp(name, p, std::strlen(p))) return true;
  return false;
}

void add_values(const at::Tensor& t) {
  if (!t.defined() || t.numel() < g_min_numel) return;
  (t.dim() > 0 && t.size(-1) == g_hidden ? g_tally->hidden_values : g_tally->values) += double(t.numel());
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  if (g_depth++ != 0 || !g_tally) return nullptr;
  ++g_tally->ops;
  g_product = is_product(fn.name());
  const auto op = fn.operator_name();
  g_out_variant = op && op->overload_name == "out";
  g_inputs.clear();
  for (const auto& v : fn.inputs())
    if (v.isTensor() && v.toTensor().defined()) g_inputs.push_back(v.toTensor());
  // An out= variant's last tensor argument is where it writes (counted as its output), not what it reads.
  if (g_out_variant && !g_inputs.empty()) g_inputs.pop_back();
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  if (--g_depth != 0 || !g_tally || g_product || is_allocation(fn.name())) return;
  std::vector<at::Tensor> outputs;
  for (const auto& v : fn.outputs())
    if (v.isTensor() && v.toTensor().defined()) outputs.push_back(v.toTensor());
  // An output on an input's storage from an op that writes no output of its own (a view, or an input
  // returned as it is): nothing read or written.
  const std::string name = fn.name();
  const bool in_place = g_out_variant || (!name.empty() && name.back() == '_');
  for (const auto& o : outputs)
    for (const auto& i : g_inputs)
      if (!in_place && o.storage().unsafeGetStorageImpl() == i.storage().unsafeGetStorageImpl()) return;
  for (const auto& t : g_inputs) add_values(t);
  for (const auto& t : outputs) add_values(t);
}

class Count {
 public:
  Count(Tally& t, int64_t min_numel, int64_t hidden)
      : handle_(at::addThreadLocalCallback(at::RecordFunctionCallback(on_start, on_end)
                                               .needsInputs(true)
                                               .needsOutputs(true)
                                               .scopes({at::RecordScope::FUNCTION}))) {
    g_tally = &t, g_depth = 0, g_min_numel = min_numel, g_hidden = hidden;
  }
  ~Count() {
    at::removeCallback(handle_);
    g_tally = nullptr;
  }

 private:
  at::CallbackHandle handle_;
};

// A reference case's model over latents `scale` times its sample's height and width (random values: the
// counts do not depend on them), both guidance branches in one batch.
struct Case {
  plan::ModelFolder folder;
  std::shared_ptr<models::DitModel> model;
  models::StepInputs in;
  pipeline::DenoiseInputs run;  // a whole run's inputs at the case's own size
};

Case make_case(const std::string& name, const models::StepInputs& base, int scale, const pipeline::DenoiseInputs& run) {
  Case c{plan::read_model_folder(test::golden_case(name)), nullptr, base, run};
  c.model = models::load_transformer(c.folder, at::kFloat, at::kCPU);
  auto shape = base.latents.sizes().vec();
  shape[shape.size() - 1] *= scale, shape[shape.size() - 2] *= scale;
  c.in.latents = at::randn(shape);
  return c;
}

void expect_counts(const Case& c) {
  const auto& rules = plan::rules_of(c.folder);
  const auto costs = rules.block_costs(c.folder);
  auto& m = *c.model;
  const auto pos = m.positions(m.token_grid(c.in.latents));
  const double batch = double(c.in.latents.size(0)), latent = double(m.token_grid(c.in.latents).tokens());
  const double tokens = latent + (m.joint_text() ? double(c.in.text.size(1)) : 0);
  const int64_t width = m.width(), hidden = costs.hidden;
  auto x = m.embed(c.in, pos);
  const auto cond = m.condition(c.in);
  Tally blocks;
  {
    Count count(blocks, int64_t(batch * tokens * width / 2), hidden);
    for (size_t i = 0; i < m.num_blocks(); ++i)
      m.run_block(i, x, cond, pos.rope_cos, pos.rope_sin, models::local_attention());
  }
  Tally outside;
  {
    Count count(outside, 1, -1);
    const auto c2 = m.condition(c.in);
    auto x2 = m.embed(c.in, pos);
    (void)m.unpatchify(m.project_out(x2.latent, c2), c.in.latents);
  }
  // A run's steps, outside the model's calls (paused): the sampler, the guidance, the latents' handling.
  Tally loop;
  constexpr int kSteps = 3;
  {
    auto sampler = models::make_sampler(c.folder, kSteps, m.token_grid(c.run.latents).tokens());
    sampling::SeededNoise noise(0);
    Count count(loop, 1, -1);
    (void)pipeline::denoise(m, *sampler, c.run, &noise, {}, [&](const models::StepInputs& s, const models::Positions& p) {
      Tally* counting = std::exchange(g_tally, nullptr);
      auto out = m.forward(s, p);
      g_tally = counting;
      return out;
    });
  }
  const double n = double(m.num_blocks());
  const double ops = blocks.ops / n, values = blocks.values / (n * batch * tokens),
               hidden_values = blocks.hidden_values / (n * batch * tokens);
  std::printf("%s: per block %.1f ops, %.2f x width + %.2f x hidden values per token (the rules: %.1f, %.2f x %lld "
              "+ %.2f x %lld); outside the blocks %d ops per call (the rules: %d); per step outside the calls "
              "%.1f (the rules: %d)\n",
              c.folder.dir.c_str(), ops, values / width, hidden_values / std::max<int64_t>(hidden, 1),
              costs.ops_per_block, costs.values_per_width, (long long)width, costs.values_per_hidden,
              (long long)hidden, outside.ops, costs.ops_per_call, double(loop.ops) / kSteps, costs.ops_per_step);
  // The rules count what the blocks do at any size; these small models run them as the real ones do.
  EXPECT_NEAR(ops, costs.ops_per_block, 0.15 * costs.ops_per_block);
  EXPECT_NEAR(values / width, costs.values_per_width, 0.2 * costs.values_per_width);
  EXPECT_NEAR(hidden_values / std::max<int64_t>(hidden, 1), costs.values_per_hidden, 0.2 * costs.values_per_hidden + 0.01);
  EXPECT_NEAR(outside.ops, costs.ops_per_call, 0.25 * costs.ops_per_call);
  EXPECT_NEAR(double(loop.ops) / kSteps, costs.ops_per_step, 0.25 * costs.ops_per_step);
}

at::Tensor golden(const std::string& c, const std::string& t) { return test::golden_tensor(c, t); }

// A run from the case's recorded inputs, guided.
pipeline::DenoiseInputs run_of(const std::string& c, const at::Tensor& latents) {
  pipeline::DenoiseInputs in;
  in.prompt_embeds = golden(c, "prompt_embeds");
  in.latents = latents;
  const auto g = test::golden_json(c);
  in.guidance_scale = g["guidance_scale"];
  if (c == "flux_tiny") in.pooled_prompt_embeds = golden(c, "pooled_prompt_embeds");
  else in.negative_prompt_embeds = golden(c, "negative_prompt_embeds");
  return in;
}

TEST(OpCounts, cogvideox_without_rope) {
  const std::string c = "cogvx2b_tiny";
  expect_counts(make_case(c, {golden(c, "step0_hidden_states"), golden(c, "step0_encoder_hidden_states"),
                              test::golden_ids(c, "step0_timestep")}, 4, run_of(c, golden(c, "latents_init"))));
}

TEST(OpCounts, cogvideox_with_rope) {
  const std::string c = "cogvx5b_tiny";
  expect_counts(make_case(c, {golden(c, "step0_hidden_states"), golden(c, "step0_encoder_hidden_states"),
                              test::golden_ids(c, "step0_timestep")}, 4, run_of(c, golden(c, "latents_init"))));
}

TEST(OpCounts, flux) {
  const std::string c = "flux_tiny";
  const auto g = test::golden_json(c);
  const auto latents = models::latents_from_file(plan::read_model_folder(test::golden_case(c)),
                                                 golden(c, "step0_hidden_states"), g["latent_height"], g["latent_width"]);
  expect_counts(make_case(c, {latents, golden(c, "step0_encoder_hidden_states"), golden(c, "step0_timestep"),
                              golden(c, "step0_pooled_projections"), golden(c, "step0_guidance")}, 4,
                          run_of(c, golden(c, "latents_init_unpacked"))));
}

TEST(OpCounts, wan) {
  const std::string c = "wan21_tiny";
  const auto both = [&](const char* a, const char* b) { return at::cat({golden(c, a), golden(c, b)}); };
  expect_counts(make_case(c, {both("latents_init", "latents_init"), both("prompt_embeds", "negative_prompt_embeds"),
                              at::full({2}, 999.0)}, 4, run_of(c, golden(c, "latents_init"))));
}

}  // namespace
}  // namespace studio

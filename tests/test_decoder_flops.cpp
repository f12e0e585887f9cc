// The cost model's count of a VAE decode (plan::Family::vae_decode_flops, each family's VAE config walking its
// levels) against what the decoder really computes: every reference case's VAE decodes random latents while
// LibTorch's RecordFunction hooks add up the FLOPs of its convolutions, matrix products and attention. A change
// to a decoder that moves its work, or a count that misses a level, shows here.
#include <gtest/gtest.h>

#include <ATen/record_function.h>
#include <ATen/ops/randn.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/family_runtime.h"
#include "models/vae_decoder.h"
#include "plan/family.h"
#include "plan/job.h"
#include "plan/model_folder.h"
#include "support.h"

namespace studio {
namespace {

thread_local double* g_flops = nullptr;
thread_local int g_depth = 0;
thread_local std::vector<at::Tensor> g_inputs;  // the top-level operation's tensors, taken as it starts

bool starts(const char* name, const char* prefix) { return !std::strncmp(name, prefix, std::strlen(prefix)); }

// 2 per multiply-add of a top-level operation that multiplies (its inner operations are its implementation).
double flops_of(const char* name, const std::vector<at::Tensor>& in, const at::Tensor& out) {
  if (starts(name, "aten::conv")) {  // weight [out, in / groups, taps...]: each output sums in / groups x taps
    const auto& w = in.at(1);
    return 2.0 * double(out.numel()) * double(w.numel() / w.size(0));
  }
  if (starts(name, "aten::linear")) return 2.0 * double(out.numel()) * double(in.at(1).size(1));
  if (starts(name, "aten::addmm")) return 2.0 * double(out.numel()) * double(in.at(1).size(-1));
  if (starts(name, "aten::matmul") || starts(name, "aten::mm") || starts(name, "aten::bmm"))
    return 2.0 * double(out.numel()) * double(in.at(0).size(-1));
  if (std::strstr(name, "scaled_dot_product")) {  // q, k, v [B, heads, L, D]: Q K^T and P V
    const auto &q = in.at(0), &k = in.at(1);
    return 4.0 * double(q.numel()) * double(k.size(-2));
  }
  return 0;
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  if (g_depth++ != 0 || !g_flops) return nullptr;
  g_inputs.clear();
  for (const auto& v : fn.inputs())
    if (v.isTensor() && v.toTensor().defined()) g_inputs.push_back(v.toTensor());
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  if (--g_depth != 0 || !g_flops) return;
  for (const auto& v : fn.outputs())
    if (v.isTensor() && v.toTensor().defined()) {
      *g_flops += flops_of(fn.name(), g_inputs, v.toTensor());
      break;
    }
  g_inputs.clear();
}

// The FLOPs of decoding `frames` frames of height x width with the case's VAE, counted as it runs.
double counted(const plan::ModelFolder& folder, int height, int width, int frames) {
  const auto vae = models::load_vae(folder, at::kFloat, at::kCPU);
  std::ifstream f(folder.dir + "/vae/config.json");
  const auto cfg = nlohmann::json::parse(f);
  const int64_t channels = cfg.contains("z_dim") ? cfg["z_dim"].get<int64_t>() : cfg["latent_channels"].get<int64_t>();
  const int64_t s = vae->spatial_compression();
  plan::JobSpec job;
  job.num_frames = frames;
  job.height = height, job.width = width;
  plan::apply_model_defaults(job, folder);
  const auto z = at::randn({1, channels, plan::latent_geometry(job, folder).frames, height / s, width / s});
  double flops = 0;
  g_flops = &flops, g_depth = 0;
  const auto handle = at::addThreadLocalCallback(
      at::RecordFunctionCallback(on_start, on_end).needsInputs(true).needsOutputs(true).scopes(
          {at::RecordScope::FUNCTION}));
  vae->decode_batches(z, [](const at::Tensor&) {});
  at::removeCallback(handle);
  g_flops = nullptr;
  return flops;
}

struct Case {
  const char* name;
  int height, width, frames;
};

class DecoderFlops : public ::testing::TestWithParam<Case> {};

TEST_P(DecoderFlops, the_plan_counts_what_the_decoder_computes) {
  const auto c = GetParam();
  const auto folder = plan::read_model_folder(test::golden_case(c.name));
  const double planned = plan::rules_of(folder).vae_decode_flops(folder, c.height, c.width, c.frames);
  const double seen = counted(folder, c.height, c.width, c.frames);
  std::printf("%s %dx%dx%d: planned %.6g FLOP, counted %.6g\n", c.name, c.width, c.height, c.frames, planned, seen);
  ASSERT_GT(seen, 0);
  EXPECT_NEAR(planned / seen, 1.0, 1e-9);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, DecoderFlops,
    ::testing::Values(Case{"cogvx2b_tiny", 48, 64, 17},  // 5 latent frames: a first batch of 3, then 2
                      Case{"cogvx5b_tiny", 48, 64, 13},  // 4: two batches of 2, no single first frame
                      Case{"wan21_tiny", 48, 64, 9}, Case{"wan22_ti2v_tiny", 64, 96, 9},
                      Case{"hunyuan15_tiny", 64, 96, 9}, Case{"flux_tiny", 64, 96, 1}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace studio

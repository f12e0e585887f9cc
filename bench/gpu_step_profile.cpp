// Where our transformer call spends the GPU's time: one call of a model folder's transformer (bench-make-model
// writes one with random weights and embeds.safetensors) at a sample size, bfloat16 on cuda:0, recorded by
// LibTorch's profiler (Kineto) after two calls that warm it (and let --attention_kernel auto choose). Prints the
// GPU time by kind of kernel (the groups of bench/gpu_profile_peer.py, which does the same for diffusers' step,
// plus our own kernels) and the kernels that took the most, as markdown tables; `--trace FILE` also writes the
// call's Chrome trace. `--fp8_gemm` runs the linear layers in float8 as the flag of that name does.
// Usage: bench-gpu-step-profile MODEL_DIR --height H --width W [--num_frames F] [--fp8_gemm] [--trace FILE]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <ATen/ops/cat.h>
#include <ATen/ops/full.h>
#include <ATen/ops/randn.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include "compat/attention_kernels.h"
#include "compat/torch_compat.h"
#include "io/weights/tensor_file.h"
#include "models/family_runtime.h"
#include "plan/job.h"
#include "plan/model_folder.h"

using namespace studio;
namespace profiler = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;

namespace {

std::string group(const std::string& name) {
  std::string n = name;
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  const auto has = [&](const char* s) { return n.find(s) != std::string::npos; };
  if (has("head_rows")) return "our head norm + rotation kernel";
  if (has("modulated_layer_norm")) return "our modulated norm kernel";
  if (has("fp8") && has("quantize")) return "our float8 quantization kernel";
  if (has("gemm") || has("cutlass") || has("sm90_xmma") || has("nvjet")) return "GEMM (linear layers)";
  if (has("flash") || has("fmha") || has("attention") || has("cudnn")) return "attention";
  if (has("layer_norm") || has("layernorm")) return "layer norm";
  if (has("gelu")) return "GELU";
  if (has("cat") || has("copy") || has("transpose") || has("contiguous")) return "copies, cat, transposes";
  return "other elementwise";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help")) {
    std::fprintf(stderr, "usage: bench-gpu-step-profile MODEL_DIR --height H --width W [--num_frames F] [--fp8_gemm] "
                         "[--trace FILE]\n");
    return 2;
  }
  if (compat::list_gpus().empty()) {
    std::fprintf(stderr, "bench-gpu-step-profile: no CUDA device\n");
    return 2;
  }
  plan::JobSpec job;
  std::string trace;
  bool fp8 = false;
  for (int i = 2; i < argc; ++i) {
    const bool value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--fp8_gemm")) fp8 = true;
    else if (value && !std::strcmp(argv[i], "--height")) job.height = std::atoi(argv[++i]);
    else if (value && !std::strcmp(argv[i], "--width")) job.width = std::atoi(argv[++i]);
    else if (value && !std::strcmp(argv[i], "--num_frames")) job.num_frames = std::atoi(argv[++i]);
    else if (value && !std::strcmp(argv[i], "--trace")) trace = argv[++i];
    else return std::fprintf(stderr, "bench-gpu-step-profile: unknown argument %s\n", argv[i]), 2;
  }
  auto model = plan::read_model_folder(argv[1]);
  model.fp8_gemm = fp8;
  plan::apply_model_defaults(job, model);
  const at::Device gpu(at::kCUDA, 0);
  const auto transformer = models::load_transformer(model, at::kBFloat16, gpu);
  const bool cfg = transformer->guidance() == models::Guidance::ClassifierFree;
  const int64_t batch = cfg ? 2 : 1;

  const io::TensorFile embeds(std::string(argv[1]) + "/embeds.safetensors", "embeds.safetensors");
  models::StepInputs in;
  in.text = embeds.get("prompt_embeds", 3, "[1, T, text_embed_dim]");
  if (cfg) in.text = at::cat({embeds.get("negative_prompt_embeds", 3, "[1, T, text_embed_dim]"), in.text});
  if (embeds.has("pooled_prompt_embeds")) in.pooled = embeds.get("pooled_prompt_embeds", 2, "[1, pooled dim]");
  if (transformer->guidance() == models::Guidance::Embedded) in.guidance = at::full({batch}, 3.5);
  in.latents = at::randn(plan::latent_geometry(job, model).shape(batch));
  in.timestep = at::full({batch}, 500.0);
  const auto pos = transformer->positions(transformer->token_grid(in.latents));
  for (int i = 0; i < 2; ++i) transformer->forward(in, pos);
  compat::synchronize(gpu);
  for (const auto& line : compat::take_attention_choices()) std::fprintf(stderr, "%s\n", line.c_str());

  const profiler::ProfilerConfig config(torch::profiler::impl::ProfilerState::KINETO);
  const std::set<ActivityType> activities{ActivityType::CPU, ActivityType::CUDA};
  profiler::prepareProfiler(config, activities);
  profiler::enableProfiler(config, activities);
  transformer->forward(in, pos);
  compat::synchronize(gpu);
  const auto result = profiler::disableProfiler();
  if (!trace.empty()) result->save(trace);

  std::map<std::string, double> groups, kernels;
  std::map<std::string, int> calls;
  double total = 0;
  for (const auto& e : result->events()) {
    if (e.deviceType() != c10::DeviceType::CUDA) continue;
    const double ms = double(e.durationNs()) / 1e6;
    groups[group(e.name())] += ms;
    kernels[e.name()] += ms;
    ++calls[e.name()];
    total += ms;
  }
  std::printf("%s, %s, batch %lld, bfloat16%s: %.2f ms of GPU time in one transformer call\n\n", model.variant.name.c_str(),
              io::shape_str(in.latents.sizes().vec()).c_str(), (long long)batch, fp8 ? ", --fp8_gemm" : "", total);
  std::vector<std::pair<double, std::string>> sorted;
  for (const auto& [name, ms] : groups) sorted.push_back({ms, name});
  std::sort(sorted.rbegin(), sorted.rend());
  std::printf("| kind | ms | share |\n|---|---|---|\n");
  for (const auto& [ms, name] : sorted) std::printf("| %s | %.2f | %.1f%% |\n", name.c_str(), ms, 100 * ms / total);
  sorted.clear();
  for (const auto& [name, ms] : kernels) sorted.push_back({ms, name});
  std::sort(sorted.rbegin(), sorted.rend());
  std::printf("\n| kernel (the 25 that took most) | calls | ms | share |\n|---|---|---|---|\n");
  for (size_t i = 0; i < std::min<size_t>(25, sorted.size()); ++i)
    std::printf("| %.110s | %d | %.2f | %.1f%% |\n", sorted[i].second.c_str(), calls[sorted[i].second], sorted[i].first,
                100 * sorted[i].first / total);
  return 0;
}

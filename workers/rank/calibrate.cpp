#include "workers/rank/calibrate.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include <ATen/Context.h>
#include <ATen/ops/add.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/full.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/min.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/zeros.h>

#include "compat/torch_compat.h"
#include "parallel/mesh.h"
#include "pipeline/device_choice.h"

namespace studio::workers {

namespace {

// Each measurement runs kWindows windows (after one untimed run) of which the fastest counts: other work on a
// shared machine slows some of them, and a moment of it that lasts longer than a window must not decide the
// figure (shorter, fewer windows gave figures far apart from one sweep to the next).
// kMeasureSeconds in all per figure, so that calibrating takes seconds.
constexpr double kMeasureSeconds = 1.0;
constexpr int kWindows = 5;

// Operations per second of `run`, which does `flops` each time: the fastest of kWindows windows, each of
// `times` runs or (times 0) of kMeasureSeconds / kWindows. Collectives need a count every rank agrees on.
template <class F>
double rate_of(double flops, const at::Device& dev, F run, int times = 0) {
  run();
  compat::synchronize(dev);
  double best = 0;
  for (int window = 0; window < kWindows; ++window) {
    const auto t0 = std::chrono::steady_clock::now();
    int n = 0;
    double s = 0;
    do {
      run();
      compat::synchronize(dev);
      ++n;
      s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    } while (times > 0 ? n < times : s < kMeasureSeconds / kWindows);
    best = std::max(best, flops * n / s);
  }
  return best;
}

// The mean of one number over every rank.
double mean(parallel::Group& world, double x, const at::Device& dev) {
  auto parts = world.all_gather(at::full({1}, x, at::TensorOptions(at::kDouble).device(dev)));
  return at::stack(parts).mean().item<double>();
}

// The least of one number over every rank.
double slowest(parallel::Group& world, double x, const at::Device& dev) {
  auto parts = world.all_gather(at::full({1}, x, at::TensorOptions(at::kDouble).device(dev)));
  return at::stack(parts).min().item<double>();
}

// Operations per second of each rank while every rank runs `run` (`flops` each) kOpsPerSync times, then
// meets the others at a collective; each window as many rounds as take kMeasureSeconds / kWindows at the
// `alone` rate (every rank computes the same count from it).
template <class F>
double lockstep(parallel::Group& world, double flops, double alone, const at::Device& dev, F run) {
  constexpr int kOpsPerSync = 4;
  const int rounds = std::clamp(int(kMeasureSeconds / kWindows * alone / (flops * kOpsPerSync)), 2, 100);
  const auto tiny = at::zeros({1}, at::TensorOptions(at::kFloat).device(dev));
  auto round = [&] {
    for (int i = 0; i < kOpsPerSync; ++i) run();
    (void)world.all_gather(tiny);
  };
  return rate_of(flops * kOpsPerSync, dev, round, rounds);
}

// Each pair of ranks alone, in turn (the others wait at an all-gather): both send 16 MB to each other at
// once, 3 times a window; [i * W + j] = the bytes per second i sent to j. NVLink, PCIe and network pairs differ.
std::vector<double> pair_rates(parallel::Group& world, int rank, const at::Device& dev) {
  const int64_t W = world.size(), values = int64_t(4) << 20;
  const auto out = at::randn({values}, at::TensorOptions(at::kFloat).device(dev)), in = at::empty_like(out);
  const auto tiny = at::zeros({1}, at::TensorOptions(at::kFloat).device(dev));
  std::vector<double> mine(size_t(W * W), 0.0);
  for (int i = 0; i < W; ++i)
    for (int j = i + 1; j < W; ++j) {
      if (rank == i || rank == j) {
        const int peer = rank == i ? j : i;
        mine[size_t(rank * W + peer)] = rate_of(4.0 * values, dev, [&] {
          world.run({{parallel::PeerOp::Send, out, peer}, {parallel::PeerOp::Recv, in, peer}});
        }, 3);
      }
      (void)world.all_gather(tiny);
    }
  const auto here = at::from_blob(mine.data(), {W * W}, at::kDouble).to(dev);
  const auto all = at::stack(world.all_gather(here)).sum(0).cpu().contiguous();
  return std::vector<double>(all.data_ptr<double>(), all.data_ptr<double>() + W * W);
}

// Head dims measured besides 64, in increasing order around it.
const std::vector<int64_t> kOtherHeadDims = {32, 128};

// A block's elementwise work, counted as the bytes it reads and writes. On a GPU each such op is bound by
// memory, which an add over tensors far larger than any cache measures (64 Mi values each). On a CPU the
// activations of a block stay in the caches and the ops differ widely (a tanh GELU computes, an add
// streams), so the mix a block runs: a layer norm, a tanh GELU, an add, a multiply and a transposing copy
// over a [4096, 256] activation, each making its output as a block's ops do.
struct Elementwise {
  at::Tensor x, y, sum;
  bool gpu;
  double bytes;
  Elementwise(const at::Device& dev, const at::TensorOptions& opts) : gpu(dev.is_cuda()) {
    const int64_t rows = gpu ? int64_t(64) << 20 : 4096, cols = gpu ? 1 : 256;
    x = at::randn({rows, cols}, opts), y = at::randn({rows, cols}, opts), sum = at::empty_like(x);
    bytes = (gpu ? 3.0 : 2 + 2 + 3 + 3 + 2) * double(x.numel()) * double(x.element_size());
  }
  void operator()() {
    if (gpu) {
      (void)at::add_out(sum, x, y);
      return;
    }
    (void)at::layer_norm(x, {x.size(1)});
    (void)at::gelu(x, "tanh");
    (void)at::add(x, y);
    (void)at::mul(x, y);
    (void)x.t().contiguous();
  }
};

}  // namespace

plan::Calibration calibrate(const parallel::DistEnv& env, const std::string& dtype_name) {
  at::Device dev = at::kCPU;
  if (at::hasCUDA()) {
    dev = at::Device(at::kCUDA, int8_t(parallel::gpu_index(env.local_rank, int(at::getNumGPUs()))));
    compat::bind_device(dev);
  }
  const auto dtype = pipeline::pick_dtype(dtype_name, dev, "--calibrate");
  plan::ParallelConfig all;
  all.ulysses_degree = env.world_size;  // one group of every rank
  auto mesh = parallel::Mesh::create(all, env, dev, std::chrono::seconds(120));
  auto& world = mesh->world();
  const auto opts = at::TensorOptions(dtype).device(dev);

  // Sizes large enough to reach a device's steady rate, small enough for a CPU core's cache-friendly tiles.
  const int64_t n = dev.is_cuda() ? 4096 : 1024, tokens = dev.is_cuda() ? 4096 : 1024, heads = 8, d = 64;
  const auto a = at::randn({n, n}, opts), b = at::randn({n, n}, opts);
  const auto q = at::randn({1, heads, tokens, d}, opts), k = at::randn({1, heads, tokens, d}, opts),
             v = at::randn({1, heads, tokens, d}, opts);
  auto gemm = [&] { return rate_of(2.0 * n * n * n, dev, [&] { (void)at::matmul(a, b); }); };
  auto attention = [&] {
    return rate_of(4.0 * heads * d * tokens * tokens, dev, [&] { (void)compat::attention(q, k, v); });
  };
  // The same attention work in heads of another size (the demo's 32, FLUX's and Wan's 128).
  auto attention_at = [&](int64_t head_dim) {
    const int64_t h = heads * d / head_dim;
    const auto q2 = at::randn({1, h, tokens, head_dim}, opts), k2 = at::randn({1, h, tokens, head_dim}, opts),
               v2 = at::randn({1, h, tokens, head_dim}, opts);
    return rate_of(4.0 * heads * d * tokens * tokens, dev, [&] { (void)compat::attention(q2, k2, v2); });
  };
  const Elementwise elementwise(dev, opts);
  // One small operation's dispatch (and launch, on a GPU): the kinds a block dispatches, each making its
  // output (a norm, a linear layer, an activation, a residual add), on tensors too small to take time of
  // their own; kSmallOps of them per run.
  constexpr int kSmallOps = 4 * 25;
  const auto small = at::randn({8, 64}, opts), small_weight = at::randn({64, 64}, opts);
  auto small_ops = [&] {
    for (int i = 0; i < kSmallOps / 4; ++i)
      (void)at::add(at::gelu(at::linear(at::layer_norm(small, {64}), small_weight), "tanh"), small);
  };

  plan::Calibration c;
  c.ranks = env.world_size;
  c.dtype = dtype_name == "auto" ? (dtype == at::kBFloat16 ? "bfloat16" : "float32") : dtype_name;
  // Alone: rank 0 works while the others wait at the next collective.
  double gemm_alone = 0, attention_alone = 0, memory_alone = 0, ops_alone = 0;
  std::vector<double> head_dim_alone(kOtherHeadDims.size(), 0.0);
  if (env.rank == 0) {
    gemm_alone = gemm(), attention_alone = attention();
    for (size_t i = 0; i < kOtherHeadDims.size(); ++i) head_dim_alone[i] = attention_at(kOtherHeadDims[i]) / attention_alone;
    memory_alone = rate_of(elementwise.bytes, dev, elementwise), ops_alone = rate_of(kSmallOps, dev, small_ops);
  }
  c.gemm_flops_per_s = mean(world, gemm_alone, dev) * env.world_size;
  c.attention_flops_per_s = mean(world, attention_alone, dev) * env.world_size;
  for (size_t i = 0; i < kOtherHeadDims.size(); ++i)
    c.attention_by_head_dim.push_back({int(kOtherHeadDims[i]), mean(world, head_dim_alone[i], dev) * env.world_size});
  c.attention_by_head_dim.insert(c.attention_by_head_dim.begin() + 1, {int(d), 1.0});
  c.memory_bytes_per_s = mean(world, memory_alone, dev) * env.world_size;
  c.op_seconds = 1 / (mean(world, ops_alone, dev) * env.world_size);
  // Together, in lockstep as a parallel step runs: each rank does its share, then waits for the others at a
  // collective. Where ranks share cores (CPU processes, more of them than cores), the last one to get a
  // core holds up the rest, which free-running measurements miss (docs/cost-model.md has the figures).
  c.gemm_flops_per_s_all = mean(world, lockstep(world, 2.0 * n * n * n, c.gemm_flops_per_s, dev,
                                                [&] { (void)at::matmul(a, b); }), dev);
  c.attention_flops_per_s_all =
      mean(world, lockstep(world, 4.0 * heads * d * tokens * tokens, c.attention_flops_per_s, dev,
                           [&] { (void)compat::attention(q, k, v); }), dev);
  c.memory_bytes_per_s_all =
      mean(world, lockstep(world, elementwise.bytes, c.memory_bytes_per_s, dev, elementwise), dev);
  // Together never faster than alone, whatever a moment of other load did to the alone measurement.
  c.gemm_flops_per_s_all = std::min(c.gemm_flops_per_s_all, c.gemm_flops_per_s);
  c.attention_flops_per_s_all = std::min(c.attention_flops_per_s_all, c.attention_flops_per_s);
  c.memory_bytes_per_s_all = std::min(c.memory_bytes_per_s_all, c.memory_bytes_per_s);
  if (dev.is_cuda()) {
    // --offload blocks: every rank copies its blocks from page-locked host memory at once, in lockstep as offloaded
    // steps run; the slowest rank's rate, which holds the others' steps back.
    const auto host = at::empty({int64_t(64) << 20}, at::TensorOptions(at::kByte).pinned_memory(true));
    auto device_copy = at::empty({host.numel()}, at::TensorOptions(at::kByte).device(dev));
    const auto copy = [&] { device_copy.copy_(host, /*non_blocking=*/true); };
    const double alone = mean(world, rate_of(double(host.numel()), dev, copy, 5), dev);
    c.host_bytes_per_s = slowest(world, lockstep(world, double(host.numel()), alone, dev, copy), dev);
  }
  if (env.world_size > 1) {
    // An all-to-all of 16 MB per rank, 5 times a window: each rank sends (W - 1) / W of it.
    const int64_t W = env.world_size, per_rank = (int64_t(16) << 20) / 4 / W * W;
    const auto big = at::randn({W, per_rank / W}, at::TensorOptions(at::kFloat).device(dev));
    const double sent = 4.0 * per_rank * (W - 1) / W;
    c.link_bytes_per_s = mean(world, rate_of(sent, dev, [&] { (void)world.all_to_all(big); }, 5), dev);
    const auto tiny = at::zeros({1}, at::TensorOptions(at::kFloat).device(dev));
    c.link_latency_s = 1 / mean(world, rate_of(1, dev, [&] { (void)world.all_gather(tiny); }, 50), dev);
    c.pair_bytes_per_s = pair_rates(world, env.rank, dev);
  }
  return c;
}

}  // namespace studio::workers

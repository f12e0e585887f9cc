// Peak memory and time of decoding a real-size CogVideoX-2B video on this machine: the real VAE config
// (block_out_channels 128/256/256/512, 3 layers per block, 32 groups, 16 latent channels) with random
// weights, latents for 480 x 720 and 49 frames (13 x 60 x 90), decoded batch by batch and streamed
// (each batch's frames are dropped once handed over, as dit-launch --output does). With --ranks N, N
// processes decode it split by rows (parallel/parallel_vae.*) over Gloo, and each reports its own peak.
// Usage: bench-vae-decode [--latent_frames N] [--height H --width W] [--ranks N]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <ATen/ops/randn.h>
#include <ATen/core/Generator.h>
#include <ATen/Context.h>

#include "forked_ranks.h"
#include "io/weights/weights.h"
#include "models/cogvideox/cogvideox_vae.h"
#include "parallel/mesh.h"
#include "parallel/parallel_vae.h"

using namespace studio;

namespace {

// One rank's decode (the whole decode when ranks == 1); rank 0 prints the table.
void decode(int rank, int ranks, int port, int frames, int height, int width) {
  plan::CogVideoXVaeConfig cfg;  // the defaults are CogVideoX-2b's vae/config.json
  auto weights = io::WeightSet::synthetic(7);
  auto vae = models::CogVideoXVae::load(weights, cfg, at::kFloat, at::kCPU);
  const double after_weights = bench::peak_rss_gib();
  at::manual_seed(0);
  auto z = at::randn({1, cfg.latent_channels, frames, height / 8, width / 8});
  plan::ParallelConfig p;
  p.ulysses_degree = ranks;  // the decode uses the world group; the layout does not matter
  parallel::DistEnv env;
  env.rank = rank;
  env.world_size = ranks;
  env.master_port = port;
  auto mesh = ranks > 1 ? parallel::Mesh::create(p, env, at::kCPU, std::chrono::hours(2)) : parallel::Mesh::single();
  if (rank == 0) {
    std::printf("CogVideoX-2B VAE decode, %dx%d, %d latent frames -> %d frames, float32, CPU, %d rank(s)\n", width,
                height, frames, vae->output_frames(frames), ranks);
    std::printf("peak RSS after loading weights: %.2f GiB\n\n", after_weights);
    std::printf("| batch | frames out | seconds | rank 0 peak RSS so far (GiB) |\n|---|---|---|---|\n");
  }
  int batch = 0;
  auto t0 = std::chrono::steady_clock::now(), start = t0;
  parallel::decode_by_rows(*vae, mesh->world(), z, [&](const at::Tensor& f) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("| %d | %ld | %.1f | %.2f |\n", ++batch, long(f.size(2)), s, bench::peak_rss_gib());
    std::fflush(stdout);
    t0 = std::chrono::steady_clock::now();
  });
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto [b, e] = models::rows_of(height / 8, rank, ranks);
  std::printf("rank %d (latent rows %ld-%ld): total %.1f s, peak RSS %.2f GiB\n", rank, long(b), long(e - 1), total,
              bench::peak_rss_gib());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  int frames = 13, height = 480, width = 720, ranks = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--latent_frames")) frames = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--height")) height = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--width")) width = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--ranks")) ranks = std::max(1, std::atoi(argv[i + 1]));
  }
  return bench::run_ranks(ranks, [&](int rank, int port) { decode(rank, ranks, port, frames, height, width); });
}

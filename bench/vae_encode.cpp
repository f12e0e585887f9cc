// Seconds and peak memory of the image-to-video encode at a real VAE size on this machine: the Wan2.1 VAE (the
// I2V-14B's: base 96, 16 latent channels) or the Wan2.2 VAE (TI2V-5B's: base 160, 48 channels, 2 x 2 patches)
// with random weights, encoding the conditioning video as WanImageToVideoPipeline builds it (the picture, then
// black frames; 480 x 832 by default). One process whole, or in tiles (--tiled: diffusers' 256-pixel tiles), or
// --ranks N processes each encoding its share of the rows over Gloo (--use_parallel_vae); each rank reports its
// own peak. The real pipelines encode 81 frames; a 2-core CPU is given fewer (--frames, 4k+1).
// Usage: bench-vae-encode [--vae wan21|wan22] [--frames F] [--height H --width W] [--ranks N] [--tiled]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include <ATen/ops/cat.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/zeros.h>
#include <ATen/Context.h>
#include <ATen/TensorOperators.h>

#include "forked_ranks.h"
#include "io/weights/weights.h"
#include "models/wan/wan_vae.h"
#include "parallel/mesh.h"
#include "parallel/parallel_vae.h"
#include "plan/families/wan_vae_config.h"

using namespace studio;

namespace {

// The published vae/config.json of each VAE.
const char* kWan21 = R"({"_class_name": "AutoencoderKLWan", "attn_scales": [], "base_dim": 96, "dim_mult": [1, 2, 4, 4],
  "dropout": 0.0, "latents_mean": [0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0], "latents_std": [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],
  "num_res_blocks": 2, "temperal_downsample": [false, true, true], "z_dim": 16})";
const char* kWan22 = R"({"_class_name": "AutoencoderKLWan", "attn_scales": [], "base_dim": 160, "decoder_base_dim": 256,
  "dim_mult": [1, 2, 4, 4], "dropout": 0.0, "in_channels": 12, "is_residual": true, "out_channels": 12,
  "patch_size": 2, "scale_factor_spatial": 16, "scale_factor_temporal": 4, "num_res_blocks": 2,
  "temperal_downsample": [false, true, true], "z_dim": 48, "latents_mean": [0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,
  0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0], "latents_std": [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,
  1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]})";

struct Options {
  std::string vae = "wan21";
  int frames = 5, height = 480, width = 832, ranks = 1;
  bool tiled = false;
};

// One rank's encode (the whole encode when ranks == 1); each rank prints its line.
void encode(int rank, int port, const Options& o) {
  const auto cfg = plan::parse_wan_vae_config(o.vae == "wan22" ? kWan22 : kWan21, o.vae + " vae/config.json");
  auto weights = io::WeightSet::synthetic(7);
  auto vae = models::WanVae::load(weights, cfg, at::kFloat, at::kCPU, /*with_encoder=*/true);
  const double after_weights = bench::peak_rss_gib();
  at::manual_seed(0);
  const auto picture = at::rand({1, 3, 1, o.height, o.width}) * 2 - 1;
  const auto video = at::cat({picture, at::zeros({1, 3, o.frames - 1, o.height, o.width})}, 2);
  std::unique_ptr<models::RowExchange> exchange;
  std::optional<models::RowShare> share;
  std::shared_ptr<parallel::Mesh> mesh;
  if (o.ranks > 1) {
    plan::ParallelConfig p;
    p.ulysses_degree = o.ranks;  // the encode uses the world group; the layout does not matter
    parallel::DistEnv env;
    env.rank = rank;
    env.world_size = o.ranks;
    env.master_port = port;
    mesh = parallel::Mesh::create(p, env, at::kCPU, std::chrono::hours(2));
    exchange = parallel::row_exchange(mesh->world());
    share = models::RowShare{exchange.get(), rank, o.ranks};
  }
  const auto start = std::chrono::steady_clock::now();
  const auto moments = o.tiled ? vae->encode_tiled(video, {256, 256}) : vae->encode(video, share ? &*share : nullptr);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("| %s | %d x %d x %d | %s | %d | %.1f | %.2f | %.2f |\n", o.vae.c_str(), o.width, o.height, o.frames,
              o.tiled ? "tiles of 256" : o.ranks > 1 ? "rows" : "whole", rank, seconds, after_weights, bench::peak_rss_gib());
  std::fflush(stdout);
  (void)moments;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const bool value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--tiled")) o.tiled = true;
    else if (value && !std::strcmp(argv[i], "--vae")) o.vae = argv[++i];
    else if (value && !std::strcmp(argv[i], "--frames")) o.frames = std::atoi(argv[++i]);
    else if (value && !std::strcmp(argv[i], "--height")) o.height = std::atoi(argv[++i]);
    else if (value && !std::strcmp(argv[i], "--width")) o.width = std::atoi(argv[++i]);
    else if (value && !std::strcmp(argv[i], "--ranks")) o.ranks = std::max(1, std::atoi(argv[++i]));
    else return std::fprintf(stderr, "usage: bench-vae-encode [--vae wan21|wan22] [--frames F] [--height H --width W] "
                                     "[--ranks N] [--tiled]\n"), 2;
  }
  return bench::run_ranks(o.ranks, [&](int rank, int port) { encode(rank, port, o); });
}

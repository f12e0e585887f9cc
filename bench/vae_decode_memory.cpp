// Peak memory and time of decoding a real-size CogVideoX-2B video on this machine: the real VAE config
// (block_out_channels 128/256/256/512, 3 layers per block, 32 groups, 16 latent channels) with random
// weights, latents for 480 x 720 and 49 frames (13 x 60 x 90), decoded batch by batch and streamed
// (each batch's frames are dropped once handed over, as dit-launch --output does).
// Usage: bench-vae-decode [--latent_frames N] [--height H --width W]
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <ATen/ops/randn.h>

#include "io/weights.h"
#include "models/cogvideox_vae.h"

using namespace studio;

namespace {

double peak_rss_gib() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_maxrss) / (1024.0 * 1024.0);  // ru_maxrss is in KiB
}

}  // namespace

int main(int argc, char** argv) {
  int frames = 13, height = 480, width = 720;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--latent_frames")) frames = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--height")) height = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--width")) width = std::atoi(argv[i + 1]);
  }
  plan::VaeConfig cfg;  // the defaults are CogVideoX-2b's vae/config.json
  auto weights = io::WeightSet::synthetic(7);
  auto vae = models::CogVideoXVae::load(weights, cfg, at::kFloat, at::kCPU);
  const double after_weights = peak_rss_gib();
  auto z = at::randn({1, cfg.latent_channels, frames, height / 8, width / 8});
  std::printf("CogVideoX-2B VAE decode, %dx%d, %d latent frames -> %d frames, float32, CPU\n", width, height, frames,
              vae->output_frames(frames));
  std::printf("peak RSS after loading weights: %.2f GiB\n\n", after_weights);
  std::printf("| batch | frames out | seconds | peak RSS so far (GiB) |\n|---|---|---|---|\n");
  int batch = 0;
  auto t0 = std::chrono::steady_clock::now();
  double total = 0;
  vae->decode_batches(z, [&](const at::Tensor& f) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    total += s;
    std::printf("| %d | %ld | %.1f | %.2f |\n", ++batch, long(f.size(2)), s, peak_rss_gib());
    std::fflush(stdout);
    t0 = std::chrono::steady_clock::now();
  });
  std::printf("\ntotal %.1f s, peak RSS %.2f GiB\n", total, peak_rss_gib());
  return 0;
}

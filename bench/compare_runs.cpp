// Compares two --save_tensors outputs: the max abs error of final_latents, and, when both hold a decoded
// video (or image), the PSNR as 8-bit pixels would show it (mapped from [-1, 1] to [0, 1] and clamped).
// Usage: bench-compare-runs A.safetensors B.safetensors   (prints: max_error psnr_db video_max_error,
// with "-" for the last two when a run was not decoded)
#include <cmath>
#include <cstdio>

#include <ATen/TensorOperators.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/max.h>

#include "io/safetensors/safetensors_file.h"
#include "io/weights/tensor_file.h"
#include "plan/error.h"
#include "workers/launch/guarded_main.h"

int main(int argc, char** argv) {
  using namespace studio;
  if (argc != 3) {
    std::fprintf(stderr, "usage: bench-compare-runs A.safetensors B.safetensors\n");
    return workers::kBadArgument;
  }
  return workers::guarded_main("bench-compare-runs: ", [&] {
    io::TensorFile a(argv[1], "A"), b(argv[2], "B");
    // A video's latents [B, F, C, h, w] and frames; an image's latents packed [B, N, 4C] (an image-to-video case
    // keeps its input picture as "image" too: the latents tell which).
    const auto la = a.get("final_latents", -1, ""), lb = b.get("final_latents", -1, "");
    if (la.sizes() != lb.sizes())
      throw InputError("final_latents: A's are " + io::shape_str(la.sizes().vec()) + ", B's " +
                       io::shape_str(lb.sizes().vec()) + ": not runs of the same job");
    const bool image = la.dim() == 3;
    const char* name = image ? "image" : "video";
    const double err = at::max(at::abs(la - lb)).item<double>();
    if (!a.has(name) || !b.has(name)) {
      std::printf("%.3g - -\n", err);
      return 0;
    }
    const int64_t rank = image ? 4 : 5;
    const auto va = a.get(name, rank, ""), vb = b.get(name, rank, "");
    auto frames = [](const at::Tensor& v) { return (v / 2 + 0.5).clamp(0, 1); };
    const double mse = (frames(va) - frames(vb)).pow(2).mean().item<double>();
    const double video_err = at::max(at::abs(va - vb)).item<double>();
    std::printf("%.3g %.1f %.3g\n", err, mse > 0 ? 10 * std::log10(1.0 / mse) : INFINITY, video_err);
    return 0;
  });
}

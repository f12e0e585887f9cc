// Compares two --save_tensors outputs: the max abs error of final_latents, and the PSNR of the decoded
// videos as 8-bit frames would show them (mapped from [-1, 1] to [0, 1] and clamped).
// Usage: bench-compare-runs A.safetensors B.safetensors   (prints: max_error psnr_db)
#include <cmath>
#include <cstdio>

#include <ATen/TensorOperators.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/max.h>

#include "io/tensor_file.h"

int main(int argc, char** argv) {
  using namespace studio;
  if (argc != 3) {
    std::fprintf(stderr, "usage: bench-compare-runs A.safetensors B.safetensors\n");
    return 2;
  }
  io::TensorFile a(argv[1], "A"), b(argv[2], "B");
  const double err = at::max(at::abs(a.get("final_latents", 5, "") - b.get("final_latents", 5, ""))).item<double>();
  auto frames = [](const at::Tensor& v) { return (v / 2 + 0.5).clamp(0, 1); };
  const double mse = (frames(a.get("video", 5, "")) - frames(b.get("video", 5, ""))).pow(2).mean().item<double>();
  std::printf("%.3g %.1f\n", err, mse > 0 ? 10 * std::log10(1.0 / mse) : INFINITY);
  return 0;
}

// The parallel VAE decode with ranks as threads: the latents split by rows (parallel::decode_by_rows).
#pragma once
#include <ATen/ops/cat.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "parallel/parallel_vae.h"
#include "rank_threads.h"

namespace studio::test {

// `z` decoded on `ranks` ranks: the batches rank 0 received, joined along frames (undefined if none);
// what each rank threw goes to `failure` ("" where nothing). Only rank 0 may receive frames.
inline at::Tensor decode_on_ranks(const models::VaeDecoder& vae, const at::Tensor& z, int ranks,
                                  std::vector<std::string>& failure) {
  plan::ParallelConfig p;
  p.ulysses_degree = ranks;  // any layout: the decode uses the world group
  at::Tensor video;
  failure = run_ranks(p, [&](int r, parallel::Mesh& mesh) {
    std::vector<at::Tensor> batches;
    parallel::decode_by_rows(vae, mesh.world(), z, [&](const at::Tensor& b) { batches.push_back(b); });
    if (r == 0 && !batches.empty()) video = at::cat(batches, 2);
    if (r != 0 && !batches.empty()) throw std::runtime_error("a rank other than 0 received frames");
  });
  return video;
}

}  // namespace studio::test

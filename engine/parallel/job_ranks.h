// Who does what when every rank of a mesh runs one job: world rank 0 encodes the prompt and shares the
// embeddings; each data-parallel group denoises its own slice of the samples; all ranks agree on stopping
// at the same step; world rank 0 decodes (every rank does, each a band of rows, with parallel VAE
// decoding) and writes the outputs.
#pragma once
#include <cstdint>
#include <functional>

#include <ATen/core/Tensor.h>

#include "parallel/mesh.h"

namespace studio::parallel {

// The samples [first, first + count) of a job that this rank's data-parallel group makes.
struct SampleSlice {
  int64_t first = 0, count = 0;
  at::Tensor of(const at::Tensor& t, int64_t dim = 0) const { return t.narrow(dim, first, count).contiguous(); }
};
SampleSlice data_slice(Mesh& mesh, int64_t samples);
// Every group's samples, in order, on every rank: [samples, ...] from this group's [count, ...].
at::Tensor gather_samples(Mesh& mesh, const at::Tensor& mine);

bool encodes(const Mesh& mesh);
// The encoding rank's `t` on every rank; `t` must have its shape and dtype everywhere.
void share_encoded(Mesh& mesh, at::Tensor& t);

// A stop check that every rank answers alike: true on all when `local` is true on any. One small
// collective per call, so every rank must call it at the same points.
std::function<bool()> agreed_stop(Mesh& mesh, std::function<bool()> local, const at::Device& device);

bool decodes(const Mesh& mesh);
bool writes(const Mesh& mesh);
// The group that shares one decode by rows; nullptr when one rank decodes alone.
Group* decode_rows(Mesh& mesh);

}  // namespace studio::parallel

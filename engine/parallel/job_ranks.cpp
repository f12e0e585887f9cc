#include "parallel/job_ranks.h"

#include <ATen/ops/cat.h>
#include <ATen/ops/full.h>

namespace studio::parallel {

SampleSlice data_slice(Mesh& mesh, int64_t samples) {
  const int64_t count = samples / mesh.config().data_parallel_degree;
  return {mesh.coords().data * count, count};
}

at::Tensor gather_samples(Mesh& mesh, const at::Tensor& mine) {
  return at::cat(mesh.group(plan::Dim::Data).all_gather(mine.contiguous()), 0);
}

bool encodes(const Mesh& mesh) { return mesh.rank() == 0; }

void share_encoded(Mesh& mesh, at::Tensor& t) { mesh.world().broadcast(t, 0); }

std::function<bool()> agreed_stop(Mesh& mesh, std::function<bool()> local, const at::Device& device) {
  if (mesh.world_size() == 1) return local;
  return [&mesh, local = std::move(local), device] {
    const at::Tensor mine = at::full({1}, local && local() ? 1.0f : 0.0f, at::TensorOptions(at::kFloat).device(device));
    for (const auto& t : mesh.world().all_gather(mine))
      if (t.item<float>() > 0) return true;
    return false;
  };
}

Group* decode_rows(Mesh& mesh) {
  return mesh.config().use_parallel_vae && mesh.world_size() > 1 ? &mesh.world() : nullptr;
}

bool decodes(const Mesh& mesh) {
  return mesh.rank() == 0 || (mesh.config().use_parallel_vae && mesh.world_size() > 1);
}

bool writes(const Mesh& mesh) { return mesh.rank() == 0; }

}  // namespace studio::parallel

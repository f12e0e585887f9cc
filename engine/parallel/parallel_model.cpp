#include "parallel/parallel_model.h"

#include <ATen/ops/cat.h>

#include "parallel/pipefusion.h"
#include "parallel/sequence.h"

namespace studio::parallel {

ParallelTransformer::ParallelTransformer(const models::CogVideoXTransformer& model, Mesh& mesh)
    : model_(model), mesh_(mesh) {
  if (mesh.config().pipefusion_parallel_degree > 1) pipefusion_ = std::make_unique<PipeFusionStage>(model, mesh);
}

ParallelTransformer::~ParallelTransformer() = default;

at::Tensor ParallelTransformer::operator()(const at::Tensor& hidden, const at::Tensor& text,
                                           const at::Tensor& timestep, const models::Positions& pos) {
  Group& cfg = mesh_.group(plan::Dim::Cfg);
  at::Tensor out;
  if (cfg.size() == 1) {
    out = branch(hidden, text, timestep, pos);
  } else {
    // The batch is [unconditional; conditional]: CFG rank c runs half c, then both halves are shared.
    const int64_t half = hidden.size(0) / 2, c = cfg.rank();
    auto mine = branch(hidden.narrow(0, c * half, half), text.narrow(0, c * half, half),
                       timestep.narrow(0, c * half, half), pos);
    out = at::cat(cfg.all_gather(mine.contiguous()), 0);
  }
  ++calls_;
  return out;
}

at::Tensor ParallelTransformer::branch(const at::Tensor& hidden, const at::Tensor& text, const at::Tensor& timestep,
                                       const models::Positions& pos) {
  if (pipefusion_) return pipefusion_->forward(calls_, hidden, text, timestep, pos);
  if (mesh_.config().sp_degree() == 1) return model_.forward(hidden, text, timestep, pos);
  const int64_t B = hidden.size(0), F = hidden.size(1), H = hidden.size(3), W = hidden.size(4);
  const auto temb = model_.time_embedding(timestep);
  auto full = model_.embed(hidden.to(model_.device(), model_.dtype()), text.to(model_.device(), model_.dtype()), pos);
  auto& sp = SequenceParallel::reuse(sequence_, mesh_, {full.text.size(1), full.video.size(1), mesh_.config().sp_degree()},
                                     full.video.device());
  auto local = sp.shard(full);
  full = {};
  const auto [cos, sin] = sp.shard_rope(pos);
  const auto attention = sp.attention();
  for (size_t i = 0; i < model_.num_blocks(); ++i) model_.run_block(i, local, temb, cos, sin, attention);
  return model_.unpatchify(sp.gather_video(model_.project_out(local.video, temb)), B, F, H, W);
}

}  // namespace studio::parallel

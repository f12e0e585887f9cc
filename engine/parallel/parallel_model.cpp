#include "parallel/parallel_model.h"

#include <ATen/ops/cat.h>

#include "parallel/sequence.h"

namespace studio::parallel {

namespace {

at::Tensor sequence_forward(const models::CogVideoXTransformer& model, Mesh& mesh, const at::Tensor& hidden,
                            const at::Tensor& text, const at::Tensor& timestep, const models::Positions& pos) {
  if (mesh.config().sp_degree() == 1) return model.forward(hidden, text, timestep, pos);
  const int64_t B = hidden.size(0), F = hidden.size(1), H = hidden.size(3), W = hidden.size(4);
  const auto dev = model.device();
  const auto temb = model.time_embedding(timestep);
  auto full = model.embed(hidden.to(dev, model.dtype()), text.to(dev, model.dtype()), pos);
  SequenceParallel sp(mesh, {full.text.size(1), full.video.size(1), mesh.config().sp_degree()});
  auto local = sp.shard(full);
  full = {};
  at::Tensor cos, sin;  // padding rows rotate by nothing
  if (pos.rope_cos.defined()) {
    cos = sp.shard_video_table(pos.rope_cos, 1.0);
    sin = sp.shard_video_table(pos.rope_sin, 0.0);
  }
  const auto attention = sp.attention();
  for (size_t i = 0; i < model.num_blocks(); ++i) model.run_block(i, local, temb, cos, sin, attention);
  const auto patches = sp.gather_video(model.project_out(local.video, temb));
  return model.unpatchify(patches, B, F, H, W);
}

}  // namespace

at::Tensor parallel_forward(const models::CogVideoXTransformer& model, Mesh& mesh, const at::Tensor& hidden,
                            const at::Tensor& text, const at::Tensor& timestep, const models::Positions& pos) {
  Group& cfg = mesh.group(plan::Dim::Cfg);
  if (cfg.size() == 1) return sequence_forward(model, mesh, hidden, text, timestep, pos);
  // The batch is [unconditional; conditional]: CFG rank c runs half c, then both halves are shared.
  const int64_t half = hidden.size(0) / 2, c = cfg.rank();
  auto mine = sequence_forward(model, mesh, hidden.narrow(0, c * half, half), text.narrow(0, c * half, half),
                               timestep.narrow(0, c * half, half), pos);
  return at::cat(cfg.all_gather(mine.contiguous()), 0);
}

}  // namespace studio::parallel

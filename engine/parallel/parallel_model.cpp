#include "parallel/parallel_model.h"

#include <ATen/ops/cat.h>

#include "parallel/pipefusion.h"
#include "plan/error.h"
#include "parallel/sequence.h"

namespace studio::parallel {

ParallelTransformer::ParallelTransformer(const models::DitModel& model, Mesh& mesh)
    : model_(model), mesh_(mesh) {
  if (mesh.config().use_cfg_parallel && model.guidance() != models::Guidance::ClassifierFree)
    throw InputError("--use_cfg_parallel: this model has no classifier-free guidance (" +
                     std::string(model.guidance() == models::Guidance::Embedded ? "it embeds the guidance scale"
                                                                                 : "it takes no guidance") +
                     "), so there is no second branch to run; split the work with --ulysses_degree, --ring_degree, "
                     "--pipefusion_parallel_degree or --data_parallel_degree instead");
  if (mesh.config().pipefusion_parallel_degree > 1) pipefusion_ = std::make_unique<PipeFusionStage>(model, mesh);
}

ParallelTransformer::~ParallelTransformer() = default;

at::Tensor ParallelTransformer::operator()(const models::StepInputs& in, const models::Positions& pos) {
  Group& cfg = mesh_.group(plan::Dim::Cfg);
  at::Tensor out;
  if (cfg.size() == 1) {
    out = branch(in, pos);
  } else {
    // The batch is [unconditional; conditional]: CFG rank c runs half c, then both halves are shared.
    const int64_t half = in.latents.size(0) / 2;
    out = at::cat(cfg.all_gather(branch(in.rows(cfg.rank() * half, half), pos).contiguous()), 0);
  }
  ++calls_;
  return out;
}

at::Tensor ParallelTransformer::branch(const models::StepInputs& in, const models::Positions& pos) {
  if (pipefusion_) return pipefusion_->forward(calls_, in, pos);
  if (mesh_.config().sp_degree() == 1) return model_.forward(in, pos);
  const auto cond = model_.condition(in);
  auto full = model_.embed(in, pos);
  auto& sp = SequenceParallel::reuse(sequence_, mesh_, {full.text.size(1), full.latent.size(1), mesh_.config().sp_degree()},
                                     full.latent.device());
  auto local = sp.shard(full);
  full = {};
  const auto [cos, sin] = sp.shard_rope(pos);
  const auto attention = sp.attention();
  for (size_t i = 0; i < model_.num_blocks(); ++i) model_.run_block(i, local, cond, cos, sin, attention);
  return model_.unpatchify(sp.gather_latent(model_.project_out(local.latent, cond)), in.latents);
}

}  // namespace studio::parallel

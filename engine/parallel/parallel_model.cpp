#include "parallel/parallel_model.h"

#include <ATen/ops/cat.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/sum.h>

#include "parallel/pipefusion.h"
#include "plan/error.h"
#include "parallel/sequence.h"

namespace studio::parallel {

ParallelTransformer::ParallelTransformer(const models::DitModel& model, Mesh& mesh,
                                         std::unique_ptr<cache::StepCache> cache)
    : model_(model), mesh_(mesh), cache_(std::move(cache)) {
  if (mesh.config().use_cfg_parallel && model.guidance() != models::Guidance::ClassifierFree)
    throw InputError("--use_cfg_parallel: this model has no classifier-free guidance (" +
                     std::string(model.guidance() == models::Guidance::Embedded ? "it embeds the guidance scale"
                                                                                 : "it takes no guidance") +
                     "), so there is no second branch to run; split the work with --ulysses_degree, --ring_degree, "
                     "--pipefusion_parallel_degree or --data_parallel_degree instead");
  if (mesh.config().pipefusion_parallel_degree > 1) pipefusion_ = std::make_unique<PipeFusionStage>(model, mesh);
  if (cache_ && pipefusion_) throw std::logic_error("internal error: a step cache under PipeFusion passed validation");
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
  const auto sum = [this](const at::Tensor& t, bool over_sequence) { return sum_over_call(t, over_sequence); };
  if (mesh_.config().sp_degree() == 1) {
    if (cache_) cache_->set_share({-1, sum});
    return model_.forward(in, pos, models::local_attention(), cache_.get());
  }
  const auto cond = model_.condition(in);
  auto full = model_.embed(in, pos);
  auto& sp = SequenceParallel::reuse(
      sequence_, mesh_, SequenceLayout::of(model_, full.text.size(1), full.latent.size(1), mesh_.config().sp_degree()),
      full.latent.device());
  auto local = sp.shard(full);
  full = {};
  const auto [cos, sin] = sp.shard_rope(pos);
  if (cache_) cache_->set_share({sp.layout().latent_valid(sp.part()), sum});
  model_.run_blocks(local, cond, cos, sin, sp.attention(), cache_.get());
  return model_.unpatchify(sp.gather_latent(model_.project_out(local.latent, cond)), in.latents);
}

at::Tensor ParallelTransformer::sum_over_call(const at::Tensor& t, bool over_sequence) {
  // Every rank adds the same gathered parts in the same order: the same sum, to the last bit, everywhere.
  at::Tensor s = t;
  for (const plan::Dim dim : {plan::Dim::Sequence, plan::Dim::Cfg, plan::Dim::Data})
    if (Group& g = mesh_.group(dim); g.size() > 1 && (over_sequence || dim != plan::Dim::Sequence))
      s = at::sum(at::stack(g.all_gather(s.contiguous())), 0);
  return s;
}

}  // namespace studio::parallel

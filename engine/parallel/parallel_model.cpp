#include "parallel/parallel_model.h"

#include <ATen/ops/cat.h>
#include <ATen/ops/full.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/sum.h>

#include "parallel/pipefusion.h"
#include "plan/error.h"
#include "parallel/sequence.h"

namespace studio::parallel {

ParallelTransformer::ParallelTransformer(const models::DitModel& model, Mesh& mesh, cache::StepCaches caches)
    : model_(model), mesh_(mesh), caches_(std::move(caches)) {
  if (mesh.config().use_cfg_parallel && model.guidance() != models::Guidance::ClassifierFree)
    throw InputError("--use_cfg_parallel: this model has no classifier-free guidance (" +
                     std::string(model.guidance() == models::Guidance::Embedded ? "it embeds the guidance scale"
                                                                                 : "it takes no guidance") +
                     "), so there is no second branch to run; split the work with --ulysses_degree, --ring_degree, "
                     "--pipefusion_parallel_degree or --data_parallel_degree instead");
  if (mesh.config().pipefusion_parallel_degree > 1) pipefusion_ = std::make_unique<PipeFusionStage>(model, mesh);
  if (!caches_.empty() && pipefusion_)
    throw std::logic_error("internal error: a step cache under PipeFusion passed validation");
}

ParallelTransformer::~ParallelTransformer() = default;

cache::StepCache* ParallelTransformer::context(int half) const {
  if (caches_.empty()) return nullptr;
  return caches_[caches_.size() == 2 ? size_t(half) : 0].get();
}

at::Tensor ParallelTransformer::operator()(const models::StepInputs& in, const models::Positions& pos) {
  Group& cfg = mesh_.group(plan::Dim::Cfg);
  // The batch is [unconditional; conditional].
  const int64_t half = in.latents.size(0) / 2;
  at::Tensor out;
  int full = 0;  // the calls of this step that ran every block
  const auto run = [&](const models::StepInputs& part, cache::StepCache* cache) {
    auto o = branch(part, pos, cache);
    if (cache) full += cache->full_calls().back();
    return o;
  };
  if (cfg.size() > 1) {
    // CFG rank c runs half c, then both halves are shared.
    out = at::cat(cfg.all_gather(run(in.rows(cfg.rank() * half, half), context(cfg.rank())).contiguous()), 0);
  } else if (caches_.size() == 2 || (model_.ragged_text() && half > 0)) {
    // The reference's two calls, each through its branch's context (or its own text length).
    if (pipefusion_ && caches_.empty())
      throw std::logic_error("internal error: PipeFusion with a call per guidance branch passed validation");
    out = at::cat({run(in.rows(0, half), context(0)), run(in.rows(half, half), context(1))}, 0);
  } else {
    out = run(in, context(0));
  }
  if (!caches_.empty()) record_step(full);
  ++calls_;
  return out;
}

void ParallelTransformer::record_step(int full) {
  if (Group& cfg = mesh_.group(plan::Dim::Cfg); cfg.size() > 1 && caches_.size() == 2) {
    const auto mine = at::full({1}, double(full), at::TensorOptions(at::kDouble).device(model_.device()));
    full = int(at::sum(at::stack(cfg.all_gather(mine)), 0).item<double>());
  }
  full_calls_per_step_.push_back(full);
}

at::Tensor ParallelTransformer::branch(const models::StepInputs& in, const models::Positions& pos,
                                       cache::StepCache* cache) {
  if (pipefusion_) return pipefusion_->forward(calls_, in, pos);
  const auto sum = [this](const at::Tensor& t, bool over_sequence) { return sum_over_call(t, over_sequence); };
  if (mesh_.config().sp_degree() == 1) {
    if (cache) cache->set_share({-1, sum});
    return model_.forward(in, pos, models::local_attention(), cache);
  }
  auto full = model_.embed(in, pos);
  auto& sp = SequenceParallel::reuse(
      sequence_, mesh_, SequenceLayout::of(model_, full.text.size(1), full.latent.size(1), mesh_.config().sp_degree()),
      full.latent.device());
  auto local = sp.shard(full);
  full = {};
  const auto [cos, sin] = sp.shard_rope(pos);
  const auto cond = sp.shard(model_.condition(in));
  if (cache) cache->set_share({sp.layout().latent_valid(sp.part()), sum});
  model_.run_blocks(local, cond, cos, sin, sp.attention(), cache);
  return model_.unpatchify(sp.gather_latent(model_.project_out(local.latent, cond)), in.latents);
}

at::Tensor ParallelTransformer::sum_over_call(const at::Tensor& t, bool over_sequence) {
  // Every rank adds the same gathered parts in the same order: the same sum, to the last bit, everywhere.
  at::Tensor s = t;
  // With a context per guidance branch, a call is one branch: the CFG group's ranks hold different calls.
  const bool whole_batch = caches_.size() < 2;
  for (const plan::Dim dim : {plan::Dim::Sequence, plan::Dim::Cfg, plan::Dim::Data})
    if (Group& g = mesh_.group(dim);
        g.size() > 1 && (over_sequence || dim != plan::Dim::Sequence) && (whole_batch || dim != plan::Dim::Cfg))
      s = at::sum(at::stack(g.all_gather(s.contiguous())), 0);
  return s;
}

}  // namespace studio::parallel

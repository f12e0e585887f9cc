// The transformer call one rank makes at each denoising step, wrapping the single-process model: the CFG
// branches split over the CFG group, layers over the PipeFusion stages, the sequence over the ring x
// Ulysses group. Every degree 1 leaves the single-process path. With a step cache, every rank holding
// part of a call takes the one-process decision (cache/step_cache.h).
#pragma once
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

#include "cache/step_cache.h"
#include "models/dit_model.h"
#include "parallel/mesh.h"

namespace studio::parallel {

class PipeFusionStage;
class SequenceParallel;

class ParallelTransformer {
 public:
  // `caches`: the run's step-cache contexts (cache::StepCaches: none, one for the whole batch, or one per
  // guidance branch; not under PipeFusion: plan::validate_parallel refuses that mix with its reason).
  ParallelTransformer(const models::DitModel& model, Mesh& mesh, cache::StepCaches caches = {});
  ~ParallelTransformer();

  // Same contract as DitModel::forward for the whole batch (both CFG branches); every rank returns the
  // whole output. Call once per denoising step, in order (PipeFusion counts warm-up steps).
  at::Tensor operator()(const models::StepInputs& in, const models::Positions& pos);

  // Cache context i (0: the whole batch's, or the unconditional branch's; 1: the conditional branch's),
  // when the run has it: what each of its calls decided, and on what. Under CFG parallelism with a context
  // per branch, a rank calls only its own branch's.
  const cache::StepCache* cache(size_t i = 0) const { return i < caches_.size() ? caches_[i].get() : nullptr; }
  // The transformer calls the reference makes a step: 2 with a cache context per guidance branch, else 1.
  int calls_per_step() const { return caches_.size() == 2 ? 2 : 1; }
  // With a step cache, for each step so far: how many of its calls_per_step() calls ran every block, over
  // every branch (the same on every rank).
  const std::vector<int>& full_calls_per_step() const { return full_calls_per_step_; }

 private:
  at::Tensor branch(const models::StepInputs& in, const models::Positions& pos, cache::StepCache* cache);
  // The context that runs CFG branch `half` (0: unconditional), or the whole batch's.
  cache::StepCache* context(int half) const;
  // Appends the step's count of calls that ran every block (with a context per branch under CFG
  // parallelism, both ranks' counts added).
  void record_step(int full);
  // A small tensor summed over every rank that holds part of this call: the CFG group (when a call is
  // the whole batch), the data group, and the sequence group when each of its ranks holds part of the
  // tensor's rows.
  at::Tensor sum_over_call(const at::Tensor& t, bool over_sequence);
  const models::DitModel& model_;
  Mesh& mesh_;
  int calls_ = 0;
  std::unique_ptr<PipeFusionStage> pipefusion_;
  std::unique_ptr<SequenceParallel> sequence_;
  cache::StepCaches caches_;
  std::vector<int> full_calls_per_step_;
};

}  // namespace studio::parallel

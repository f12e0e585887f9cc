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
  // `cache`: a step cache for the run (not under PipeFusion: plan::validate_parallel refuses that mix
  // with its reason).
  ParallelTransformer(const models::DitModel& model, Mesh& mesh, std::unique_ptr<cache::StepCache> cache = nullptr);
  ~ParallelTransformer();

  // Same contract as DitModel::forward for the whole batch (both CFG branches); every rank returns the
  // whole output. Call once per denoising step, in order (PipeFusion counts warm-up steps).
  at::Tensor operator()(const models::StepInputs& in, const models::Positions& pos);

  // The cache, when the run has one (what each call decided, and on what).
  const cache::StepCache* cache() const { return cache_.get(); }

 private:
  at::Tensor branch(const models::StepInputs& in, const models::Positions& pos);
  // A small tensor summed over every rank that holds part of this call: the CFG and data groups, and the
  // sequence group when each of its ranks holds part of the tensor's rows.
  at::Tensor sum_over_call(const at::Tensor& t, bool over_sequence);
  const models::DitModel& model_;
  Mesh& mesh_;
  int calls_ = 0;
  std::unique_ptr<PipeFusionStage> pipefusion_;
  std::unique_ptr<SequenceParallel> sequence_;
  std::unique_ptr<cache::StepCache> cache_;
};

}  // namespace studio::parallel

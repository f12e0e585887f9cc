// The transformer call one rank makes at each denoising step, wrapping the single-process model: the CFG
// branches split over the CFG group, layers over the PipeFusion stages, the sequence over the ring x
// Ulysses group. Every degree 1 leaves the single-process path. With a First-Block Cache, every rank
// holding part of a call takes the one-process decision (cache/first_block_cache.h).
#pragma once
#include <memory>
#include <optional>
#include <vector>

#include <ATen/core/Tensor.h>

#include "cache/first_block_cache.h"
#include "models/dit_model.h"
#include "parallel/mesh.h"

namespace studio::parallel {

class PipeFusionStage;
class SequenceParallel;

class ParallelTransformer {
 public:
  // `fbcache_threshold`: run with a First-Block Cache (not under PipeFusion: plan::validate_parallel
  // refuses that mix with its reason).
  ParallelTransformer(const models::DitModel& model, Mesh& mesh, std::optional<double> fbcache_threshold = {});
  ~ParallelTransformer();

  // Same contract as DitModel::forward for the whole batch (both CFG branches); every rank returns the
  // whole output. Call once per denoising step, in order (PipeFusion counts warm-up steps).
  at::Tensor operator()(const models::StepInputs& in, const models::Positions& pos);

  // The cache, when the run has one (what each call decided, and on what).
  const cache::FirstBlockCache* cache() const { return cache_.get(); }

 private:
  at::Tensor branch(const models::StepInputs& in, const models::Positions& pos);
  // A small tensor summed over every rank that holds part of this call: sequence, CFG and data groups.
  at::Tensor sum_over_call(const at::Tensor& t);
  const models::DitModel& model_;
  Mesh& mesh_;
  int calls_ = 0;
  std::unique_ptr<PipeFusionStage> pipefusion_;
  std::unique_ptr<SequenceParallel> sequence_;
  std::unique_ptr<cache::FirstBlockCache> cache_;
};

}  // namespace studio::parallel

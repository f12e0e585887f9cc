// The transformer call one rank makes at each denoising step, wrapping the single-process model: the CFG
// branches split over the CFG group, layers over the PipeFusion stages, the sequence over the ring x
// Ulysses group. Every degree 1 leaves the single-process path.
#pragma once
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

#include "models/dit_model.h"
#include "parallel/mesh.h"

namespace studio::parallel {

class PipeFusionStage;
class SequenceParallel;

class ParallelTransformer {
 public:
  ParallelTransformer(const models::DitModel& model, Mesh& mesh);
  ~ParallelTransformer();

  // Same contract as DitModel::forward for the whole batch (both CFG branches); every rank returns the
  // whole output. Call once per denoising step, in order (PipeFusion counts warm-up steps).
  at::Tensor operator()(const models::StepInputs& in, const models::Positions& pos);

 private:
  at::Tensor branch(const models::StepInputs& in, const models::Positions& pos);
  const models::DitModel& model_;
  Mesh& mesh_;
  int calls_ = 0;
  std::unique_ptr<PipeFusionStage> pipefusion_;
  std::unique_ptr<SequenceParallel> sequence_;
};

}  // namespace studio::parallel

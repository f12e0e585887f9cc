// PipeFusion: the transformer's layers split into stages over the PipeFusion group. Warm-up steps are
// synchronous: the whole sequence (this rank's sequence shard, with ring x Ulysses inside each stage)
// passes from stage to stage, so they equal one process. Later steps are pipelined: the latent is cut into
// num_pipeline_patch patches of token rows that flow through the stages one after another, each layer
// attending to a buffer of keys and values that is fresh for the patches already done this step and one
// step old for the rest (the stale activations PipeFusion trades for overlap).
#pragma once
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

#include "models/dit_model.h"
#include "parallel/mesh.h"
#include "parallel/sequence.h"

namespace studio::parallel {

class PipeFusionStage {
 public:
  PipeFusionStage(const models::DitModel& model, Mesh& mesh);

  // `step` counts the calls from 0; steps below warmup_steps are synchronous. Every rank of the
  // PipeFusion group returns the whole output.
  at::Tensor forward(int step, const models::StepInputs& in, const models::Positions& pos);

  size_t first_layer() const { return first_; }
  size_t end_layer() const { return end_; }

 private:
  at::Tensor synchronous(const models::StepInputs& in, const models::Positions& pos);
  at::Tensor pipelined(const models::StepInputs& in, const models::Positions& pos);
  // What both kinds of step need to know about the call.
  struct Step {
    int64_t B, T;  // samples, text rows between blocks (with a picture's tokens)
    models::TokenGrid grid;
    models::Conditioning cond;
    at::TensorOptions opts;
  };
  Step step_of(const models::StepInputs& in) const;
  at::Tensor share_output(at::Tensor out, const models::StepInputs& in, const Step& s);

  const models::DitModel& model_;
  Mesh& mesh_;
  int stage_ = 0, stages_ = 1;
  size_t first_ = 0, end_ = 0;
  std::unique_ptr<SequenceParallel> sequence_;  // for the warm-up steps
  std::vector<at::Tensor> keys_, values_;  // per layer of this stage: [B, heads, text + latent, head_dim]
};

}  // namespace studio::parallel

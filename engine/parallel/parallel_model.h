// The transformer call one rank makes at each denoising step, wrapping the single-process model: the CFG
// branches split over the CFG group, the sequence over the ring x Ulysses group. Every degree 1 leaves
// the single-process path.
#pragma once
#include <ATen/core/Tensor.h>

#include "models/cogvideox_transformer.h"
#include "parallel/mesh.h"

namespace studio::parallel {

// Same contract as CogVideoXTransformer::forward, for the whole batch (both CFG branches); every rank of
// the CFG and sequence groups returns the whole output.
at::Tensor parallel_forward(const models::CogVideoXTransformer& model, Mesh& mesh, const at::Tensor& hidden,
                            const at::Tensor& text, const at::Tensor& timestep, const models::Positions& pos);

}  // namespace studio::parallel

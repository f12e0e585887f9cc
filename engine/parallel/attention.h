// Attention over one block of keys, carried with the log-sum-exp of each query's scores, so that blocks
// seen one after another (Ring attention) merge into exactly what one softmax over all keys gives.
#pragma once
#include <ATen/core/Tensor.h>

namespace studio::parallel {

struct Partial {
  at::Tensor out;  // [B, H, Sq, d] float32
  at::Tensor lse;  // [B, H, Sq, 1] float32
};

// q [B, H, Sq, d], k and v [B, H, Sk, d] with Sk > 0, through the fused kernel where LibTorch has one.
Partial attend_block(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);

// Folds `next` into `acc` (acc may start undefined), in float32.
void merge(Partial& acc, const Partial& next);

}  // namespace studio::parallel

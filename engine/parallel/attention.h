// Attention over one block of keys, returning the log-sum-exp of each query's scores with the output,
// so that blocks seen one after another (Ring attention) merge into exactly what one softmax over all
// keys gives. Keys can be masked (padding rows).
#pragma once
#include <ATen/core/Tensor.h>

namespace studio::parallel {

struct Partial {
  at::Tensor out;  // [B, H, Sq, d] float32
  at::Tensor lse;  // [B, H, Sq, 1] float32; -inf where a query saw no valid key
};

// q [B, H, Sq, d], k and v [B, H, Sk, d], key_valid [Sk] bool (undefined: all valid).
Partial attend_block(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& key_valid);

// Folds `next` into `acc` (acc may start undefined).
void merge(Partial& acc, const Partial& next);

}  // namespace studio::parallel

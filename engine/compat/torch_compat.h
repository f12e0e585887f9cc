// Every call that differs between LibTorch 1.13 (Debian, CPU) and 2.x (CUDA builds) goes through
// here; nothing else in the code checks a torch version.
#pragma once
#include <ATen/core/Tensor.h>

namespace studio::compat {

// softmax(q k^T / sqrt(head_dim)) v for q, k, v of shape [B, heads, S, head_dim].
// 2.x: at::scaled_dot_product_attention (flash / memory-efficient kernels where available).
// 1.13 has no public fused kernel: the math, in blocks of queries so that the score matrix of a
// real-size video (17,776 tokens) never has to exist whole.
at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);

// "1.13.1" etc., for logs and --version.
const char* torch_version();

}  // namespace studio::compat

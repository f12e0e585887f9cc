// LibTorch 2.x hands float unary ops on the CPU (sqrt, exp, log, sin, tanh, erf, ...) to MKL's VML, each
// intra-op thread its chunk. The oneMKL in its wheels picks each VML function's kernel on the function's first
// call; when that first call runs on two threads at once, one of them can run a low-accuracy kernel for its
// whole chunk (pytorch/pytorch#188792): a rank's first rms-norm then came out wrong on the rows of its second
// thread, now and then (docs/cost-model.md). One single-element call per function and precision, made when the
// program loads, before anything runs in parallel, settles the choice. Without MKL (Debian's LibTorch 1.13)
// these are a few ordinary tiny ops.
//
// No other file of the engine makes a tensor as the program loads, so the first one LibTorch makes is made here:
// this is also where the process chooses huge pages for large tensors (compat/heap.h), which LibTorch reads at
// its first tensor. A tensor made by another static initializer before this one would keep them off.
//
// Every program that links the engine runs this: engine/CMakeLists.txt makes the linker take this file
// (-u studio_vector_math_kernels_settled) though nothing calls into it.
#include <ATen/ops/acos.h>
#include <ATen/ops/asin.h>
#include <ATen/ops/atan.h>
#include <ATen/ops/cos.h>
#include <ATen/ops/erf.h>
#include <ATen/ops/erfc.h>
#include <ATen/ops/erfinv.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/full.h>
#include <ATen/ops/log.h>
#include <ATen/ops/log10.h>
#include <ATen/ops/log2.h>
#include <ATen/ops/sin.h>
#include <ATen/ops/sqrt.h>
#include <ATen/ops/tan.h>
#include <ATen/ops/tanh.h>
#include <ATen/ops/trunc.h>

#include <cstdio>
#include <exception>

#include "compat/heap.h"

namespace {

// ATen's functions that reach MKL's VML (IMPLEMENT_VML_MKL in ATen/cpu/vml.h), in float and double.
bool settle_vector_math_kernels() {
  studio::compat::huge_pages_for_large_tensors();
  try {
    for (const auto dtype : {at::kFloat, at::kDouble}) {
      const auto x = at::full({1}, 0.5, at::TensorOptions(dtype));
      for (auto* op : {&at::acos, &at::asin, &at::atan, &at::cos, &at::erf, &at::erfc, &at::erfinv, &at::exp,
                       &at::log, &at::log10, &at::log2, &at::sin, &at::sqrt, &at::tan, &at::tanh, &at::trunc})
        op(x);
    }
    return true;
  } catch (const std::exception& e) {  // before main: say so, and run without the warm-up
    std::fprintf(stderr, "warning: warming up LibTorch's vector math failed: %s\n", e.what());
    return false;
  }
}

}  // namespace

extern "C" const bool studio_vector_math_kernels_settled = settle_vector_math_kernels();

// The few layers CogVideoX is made of, as plain ATen calls over weights taken from a WeightSet.
#pragma once
#include <string>

#include <ATen/core/Tensor.h>

#include "io/weights.h"

namespace studio::models {

// Where weights come from and in which dtype and device they are wanted.
struct WeightSource {
  io::WeightSet& weights;
  at::ScalarType dtype;
  at::Device device;
  at::Tensor take(const std::string& name, const std::vector<int64_t>& shape, const std::string& note = "") const {
    return weights.take(name, shape, dtype, device, note);
  }
};

struct Linear {
  at::Tensor weight, bias;  // bias may be undefined
  static Linear load(const WeightSource& w, const std::string& prefix, int64_t in, int64_t out, bool bias = true);
  at::Tensor operator()(const at::Tensor& x) const;
};

struct LayerNorm {
  at::Tensor weight, bias;  // undefined without elementwise affine
  int64_t dim = 0;
  double eps = 1e-5;
  static LayerNorm load(const WeightSource& w, const std::string& prefix, int64_t dim, double eps, bool affine);
  at::Tensor operator()(const at::Tensor& x) const;
};

}  // namespace studio::models

#include "compat/attention_kernels.h"

#include <array>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/softmax.h>
#include <c10/util/Exception.h>
#include <torch/version.h>
#if TORCH_VERSION_MAJOR >= 2
#include <ATen/ops/_scaled_dot_product_cudnn_attention.h>
#include <ATen/ops/_scaled_dot_product_efficient_attention.h>
#include <ATen/ops/_scaled_dot_product_flash_attention.h>
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu.h>
#include <ATen/ops/scaled_dot_product_attention.h>
#else
#include <ATen/ops/exp.h>
#include <ATen/ops/logsumexp.h>
#endif

#include "compat/torch_compat.h"

namespace studio::compat {

#if TORCH_VERSION_MAJOR >= 2

namespace {

enum class Kernel { Flash, Cudnn, Efficient, Torch };
const std::map<std::string, Kernel> kKernels = {
    {"flash", Kernel::Flash}, {"cudnn", Kernel::Cudnn}, {"efficient", Kernel::Efficient}, {"torch", Kernel::Torch}};

const char* name_of(Kernel k) {
  for (const auto& [name, kernel] : kKernels)
    if (kernel == k) return name.c_str();
  return "?";
}

// What auto's choice depends on: q's sizes, the keys' count, the dtype, and whether the log-sum-exp is wanted.
using ShapeKey = std::tuple<std::array<int64_t, 4>, int64_t, at::ScalarType, bool>;

struct Choices {
  std::mutex mutex;
  std::string requested = "auto";
  std::map<ShapeKey, Kernel> by_shape;  // auto's choices
  std::vector<std::string> untold;      // reports not yet taken
};
Choices& choices() {
  static Choices c;
  return c;
}

// One kernel's result; lse [B, heads, S] float32 when asked for.
AttentionWithLse run(Kernel kernel, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool with_lse) {
  const auto lse_of = [&](const at::Tensor& lse) {  // memory-efficient pads its rows to a multiple of 32
    return with_lse ? lse.flatten(2).narrow(-1, 0, q.size(2)).to(at::kFloat) : at::Tensor();
  };
  switch (kernel) {
    case Kernel::Flash: {
      auto r = at::_scaled_dot_product_flash_attention(q, k, v);
      return {std::get<0>(r), lse_of(std::get<1>(r))};
    }
    case Kernel::Cudnn: {
      auto r = at::_scaled_dot_product_cudnn_attention(q, k, v, std::nullopt, with_lse);
      return {std::get<0>(r), lse_of(std::get<1>(r))};
    }
    case Kernel::Efficient: {
      auto r = at::_scaled_dot_product_efficient_attention(q, k, v, std::nullopt, with_lse);
      return {std::get<0>(r), lse_of(std::get<1>(r))};
    }
    case Kernel::Torch:
      if (!with_lse) return {at::scaled_dot_product_attention(q, k, v), {}};
      return run(q.scalar_type() == at::kFloat ? Kernel::Efficient : Kernel::Flash, q, k, v, true);
  }
  return {};
}

// For messages: "[2, 30, 17776, 64] BFloat16 with log-sum-exp".
std::string shape_text(const at::Tensor& q, const at::Tensor& k, bool with_lse) {
  std::ostringstream s;
  s << q.sizes();
  if (k.size(2) != q.size(2)) s << " x " << k.size(2) << " keys";
  s << " " << c10::toString(q.scalar_type()) << (with_lse ? " with log-sum-exp" : "");
  return s.str();
}

// The fastest kernel that runs on this shape: each timed over 3 calls after one that warms it up.
Kernel fastest(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool with_lse, std::string& report) {
  std::ostringstream timings;
  Kernel best = Kernel::Torch;
  double best_ms = INFINITY;
  for (Kernel kernel : {Kernel::Flash, Kernel::Cudnn, Kernel::Efficient}) {
    try {
      run(kernel, q, k, v, with_lse);
      synchronize(q.device());
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 3; ++i) run(kernel, q, k, v, with_lse);
      synchronize(q.device());
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / 3;
      timings << (timings.tellp() > 0 ? ", " : "") << name_of(kernel) << " " << ms << " ms";
      if (ms < best_ms) best = kernel, best_ms = ms;
    } catch (const c10::Error&) {
      timings << (timings.tellp() > 0 ? ", " : "") << name_of(kernel) << " does not run here";
    }
  }
  report = std::string(name_of(best)) + " (" + timings.str() + ")";
  return best;
}

AttentionWithLse dispatch(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool with_lse) {
  if (!q.is_cuda()) {
    if (!with_lse) return {at::scaled_dot_product_attention(q, k, v), {}};
    auto r = at::_scaled_dot_product_flash_attention_for_cpu(q, k, v);
    return {std::get<0>(r), std::get<1>(r).to(at::kFloat)};
  }
  auto& c = choices();
  Kernel kernel;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.requested != "auto") {
      kernel = kKernels.at(c.requested);
    } else {
      // A key made of numbers: this runs for every attention call.
      const ShapeKey key{{q.size(0), q.size(1), q.size(2), q.size(3)}, k.size(2), q.scalar_type(), with_lse};
      auto it = c.by_shape.find(key);
      if (it == c.by_shape.end()) {
        std::string report;
        it = c.by_shape.emplace(key, fastest(q, k, v, with_lse, report)).first;
        c.untold.push_back("attention " + shape_text(q, k, with_lse) + ": " + report);
      }
      kernel = it->second;
    }
  }
  try {
    return run(kernel, q, k, v, with_lse);
  } catch (const c10::Error& e) {
    const std::string why = e.what_without_backtrace();
    throw std::runtime_error("--attention_kernel " + std::string(name_of(kernel)) + " cannot run the attention " +
                             shape_text(q, k, with_lse) + " on this GPU (" + why.substr(0, why.find('\n')) +
                             "); use --attention_kernel auto, which keeps to the kernels that run");
  }
}

}  // namespace

void set_attention_kernel(const std::string& name) {
  auto& c = choices();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.requested = name;
}

std::vector<std::string> take_attention_choices() {
  auto& c = choices();
  std::lock_guard<std::mutex> lock(c.mutex);
  return std::exchange(c.untold, {});
}

at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  return dispatch(q, k, v, false).out;
}

AttentionWithLse attention_with_lse(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  return dispatch(q, k, v, true);
}

#else  // 1.13: no fused kernel to choose; the math, in blocks of queries

void set_attention_kernel(const std::string&) {}
std::vector<std::string> take_attention_choices() { return {}; }

namespace {

// Blocks of queries keep the score matrix of a real-size video (17,776 tokens) bounded (~256 MB of fp32).
int64_t query_block(const at::Tensor& q, const at::Tensor& k) {
  const int64_t per_query = q.size(0) * q.size(1) * k.size(2);
  return std::max<int64_t>(1, (int64_t(64) << 20) / std::max<int64_t>(per_query, 1));
}

}  // namespace

at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  const double scale = 1.0 / std::sqrt(double(q.size(-1)));
  const int64_t block = query_block(q, k);
  const auto kt = k.transpose(-2, -1);
  if (block >= q.size(2)) return at::matmul(at::softmax(at::matmul(q, kt) * scale, -1), v);
  std::vector<at::Tensor> parts;
  for (int64_t s = 0; s < q.size(2); s += block) {
    auto qs = q.narrow(2, s, std::min(block, q.size(2) - s));
    parts.push_back(at::matmul(at::softmax(at::matmul(qs, kt) * scale, -1), v));
  }
  return at::cat(parts, 2);
}

AttentionWithLse attention_with_lse(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  const double scale = 1.0 / std::sqrt(double(q.size(-1)));
  const int64_t block = query_block(q, k);
  const auto kt = k.to(at::kFloat).transpose(-2, -1);
  const auto vf = v.to(at::kFloat);
  std::vector<at::Tensor> outs, lses;
  for (int64_t s = 0; s < q.size(2); s += block) {
    auto scores = at::matmul(q.narrow(2, s, std::min(block, q.size(2) - s)).to(at::kFloat), kt) * scale;
    auto lse = at::logsumexp(scores, {-1}, true);
    outs.push_back(at::matmul(at::exp(scores - lse), vf));
    lses.push_back(lse.squeeze(-1));
  }
  return {at::cat(outs, 2).to(q.scalar_type()), at::cat(lses, 2)};
}

#endif

}  // namespace studio::compat

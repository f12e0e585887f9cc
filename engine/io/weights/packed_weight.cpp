#include "io/weights/packed_weight.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

#include <ATen/Parallel.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/bitwise_and.h>
#include <ATen/ops/bitwise_left_shift.h>
#include <ATen/ops/bitwise_or.h>
#include <ATen/ops/bitwise_right_shift.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/mul.h>

#include "compat/torch_compat.h"

namespace studio::io {

using plan::WeightFormat;

namespace {

// Block fields, each [blocks, n]: bytes as int32, a little-endian fp16 as float32.
at::Tensor field(const at::Tensor& blocks, int64_t offset, int64_t n) {
  return blocks.narrow(1, offset, n).to(at::kInt);
}
at::Tensor half_field(const at::Tensor& blocks, int64_t offset) {
  return blocks.narrow(1, offset, 2).contiguous().view(at::kHalf).to(at::kFloat);
}
at::Tensor low(const at::Tensor& q) { return at::bitwise_and(q, 15); }
at::Tensor high(const at::Tensor& q) { return at::bitwise_right_shift(q, 4); }
// (q >> shift) & mask for the shifts 0, step, ... (n of them), along a new dimension before the last of q.
at::Tensor bits(const at::Tensor& q, int64_t n, int64_t step, int mask) {
  const auto shifts = at::arange(0, n * step, step, at::TensorOptions(at::kInt).device(q.device())).view({-1, 1});
  return at::bitwise_and(at::bitwise_right_shift(q.unsqueeze(-2), shifts), mask);
}

// The 32-value blocks: Q8_0 d*q; Q4_0 d*(q-8); Q4_1 d*q+m; Q5_0 d*(q-16); Q5_1 d*q+m, where a 4-bit value j
// is byte j's low nibble and value j+16 its high one, and Q5's fifth bit of value j is bit j of a uint32.
at::Tensor small_blocks(WeightFormat f, const at::Tensor& b) {
  const int64_t nb = b.size(0);
  if (f == WeightFormat::Q8_0) return half_field(b, 0) * b.narrow(1, 2, 32).contiguous().view(at::kChar).to(at::kFloat);
  const bool with_min = f == WeightFormat::Q4_1 || f == WeightFormat::Q5_1;
  const bool five = f == WeightFormat::Q5_0 || f == WeightFormat::Q5_1;
  const int64_t qs_at = (with_min ? 4 : 2) + (five ? 4 : 0);
  const auto qs = field(b, qs_at, 16);
  auto q = at::cat({low(qs), high(qs)}, 1);
  if (five) q = at::bitwise_or(q, at::bitwise_left_shift(bits(field(b, with_min ? 4 : 2, 4), 8, 1, 1)
                                                            .transpose(-1, -2).reshape({nb, 32}), 4));
  const auto d = half_field(b, 0);
  if (with_min) return d * q.to(at::kFloat) + half_field(b, 2);
  return d * (q - (five ? 16 : 8)).to(at::kFloat);
}

// Q4_K and Q5_K's eight 6-bit scales and mins from their 12 bytes (ggml's get_scale_min_k4).
std::pair<at::Tensor, at::Tensor> k4_scales(const at::Tensor& b) {
  const auto s = field(b, 4, 12);
  const auto a = s.narrow(1, 0, 4), m = s.narrow(1, 4, 4), c = s.narrow(1, 8, 4);
  const auto top = [](const at::Tensor& x) { return at::bitwise_left_shift(at::bitwise_right_shift(x, 6), 4); };
  const auto sc = at::cat({at::bitwise_and(a, 63), at::bitwise_or(low(c), top(a))}, 1);
  const auto mn = at::cat({at::bitwise_and(m, 63), at::bitwise_or(high(c), top(m))}, 1);
  return {sc.to(at::kFloat).unsqueeze(-1), mn.to(at::kFloat).unsqueeze(-1)};
}

// The 256-value super-blocks, value order as ggml's dequantize_row_q*_K.
at::Tensor k_blocks(WeightFormat f, const at::Tensor& b) {
  const int64_t nb = b.size(0);
  switch (f) {
    case WeightFormat::Q2_K: {  // scales[16] qs[64] d dmin; value (n, j, h, l) = 2 bits of qs[n, h, l] at 2j
      const auto q = bits(field(b, 16, 64).view({nb, 2, 32}), 4, 2, 3).view({nb, 2, 4, 2, 16});
      const auto sc = field(b, 0, 16).view({nb, 2, 4, 2, 1});
      const auto d = half_field(b, 80).view({nb, 1, 1, 1, 1}), dmin = half_field(b, 82).view({nb, 1, 1, 1, 1});
      return (d * low(sc).to(at::kFloat) * q.to(at::kFloat) - dmin * high(sc).to(at::kFloat)).view({nb, 256});
    }
    case WeightFormat::Q3_K: {  // hmask[32] qs[64] scales[12] d; signed 6-bit scales, 3-bit values
      const auto q = bits(field(b, 32, 64).view({nb, 2, 32}), 4, 2, 3);            // [nb, 2, 4, 32]
      const auto h = bits(field(b, 0, 32), 8, 1, 1).view({nb, 2, 4, 32});  // bit 4n + j
      const auto s = field(b, 96, 12);
      const auto lo = at::cat({low(s.narrow(1, 0, 8)), high(s.narrow(1, 0, 8))}, 1);
      const auto hi = bits(s.narrow(1, 8, 4), 4, 2, 3).reshape({nb, 16});
      const auto sc = (at::bitwise_or(lo, at::bitwise_left_shift(hi, 4)) - 32).to(at::kFloat).view({nb, 2, 4, 2, 1});
      const auto v = (q - 4 * (1 - h)).to(at::kFloat).view({nb, 2, 4, 2, 16});
      return (half_field(b, 108).view({nb, 1, 1, 1, 1}) * sc * v).view({nb, 256});
    }
    case WeightFormat::Q4_K:    // d dmin scales[12] qs[128]
    case WeightFormat::Q5_K: {  // d dmin scales[12] qh[32] qs[128]; sub-block s's fifth bit is bit s of qh[l]
      const bool five = f == WeightFormat::Q5_K;
      const auto qs = field(b, five ? 48 : 16, 128).view({nb, 4, 1, 32});
      auto q = at::cat({low(qs), high(qs)}, 2).view({nb, 8, 32});
      if (five) q = q + 16 * bits(field(b, 16, 32), 8, 1, 1);
      const auto [sc, mn] = k4_scales(b);
      const auto d = half_field(b, 0).view({nb, 1, 1}), dmin = half_field(b, 2).view({nb, 1, 1});
      return (d * sc * q.to(at::kFloat) - dmin * mn).view({nb, 256});
    }
    case WeightFormat::Q6_K: {  // ql[128] qh[64] scales[16] (int8) d; value (n, k, l) for quarter k of half n
      const auto ql = field(b, 0, 128).view({nb, 2, 2, 32});
      const auto lo = at::cat({low(ql), high(ql)}, 2);                                   // [nb, 2, 4, 32]
      const auto hi = bits(field(b, 128, 64).view({nb, 2, 32}), 4, 2, 3);       // [nb, 2, 4, 32]
      const auto q = (at::bitwise_or(lo, at::bitwise_left_shift(hi, 4)) - 32).to(at::kFloat).view({nb, 2, 4, 2, 16});
      const auto sc = b.narrow(1, 192, 16).contiguous().view(at::kChar).to(at::kFloat).view({nb, 2, 4, 2, 1});
      return (half_field(b, 208).view({nb, 1, 1, 1, 1}) * sc * q).view({nb, 256});
    }
    default: throw std::logic_error("k_blocks: not a K-quant");
  }
}

float e4m3fn_value(uint8_t c) {
  const int e = (c >> 3) & 15, m = c & 7;
  const float v = e == 15 && m == 7 ? NAN : e == 0 ? std::ldexp(m / 8.0f, -6) : std::ldexp(1 + m / 8.0f, e - 7);
  return c & 0x80 ? -v : v;
}
float e5m2_value(uint8_t c) {
  const int e = (c >> 2) & 31, m = c & 3;
  const float v = e == 31 ? (m ? NAN : INFINITY) : e == 0 ? std::ldexp(m / 4.0f, -14) : std::ldexp(1 + m / 4.0f, e - 15);
  return c & 0x80 ? -v : v;
}

// Every byte's value: LibTorch's own float8 conversion, or a table indexed by the stored bytes.
at::Tensor fp8_values(const at::Tensor& bytes, WeightFormat f) {
  if (auto v = compat::float8_view(bytes, f == WeightFormat::F8_E5M2); v.defined()) return v.to(at::kFloat);
  static const auto tables = [] {
    std::array<std::array<float, 256>, 2> t{};
    for (int c = 0; c < 256; ++c) t[0][c] = e4m3fn_value(uint8_t(c)), t[1][c] = e5m2_value(uint8_t(c));
    return t;
  }();
  const auto& table = tables[f == WeightFormat::F8_E4M3 ? 0 : 1];
  const auto lut = at::from_blob(const_cast<float*>(table.data()), {256}, at::kFloat).to(bytes.device());
  return at::index_select(lut, 0, bytes.flatten().to(at::kInt)).view(bytes.sizes());
}

}  // namespace

at::Tensor dequantize_rows(WeightFormat f, const at::Tensor& bytes, int64_t row_values) {
  const int64_t rows = bytes.size(0);
  const auto& info = plan::format_info(f);
  const auto flat = bytes.contiguous();
  switch (f) {
    case WeightFormat::F32: return flat.view(at::kFloat).view({rows, row_values});
    case WeightFormat::F16: return flat.view(at::kHalf).to(at::kFloat).view({rows, row_values});
    case WeightFormat::BF16: return flat.view(at::kBFloat16).to(at::kFloat).view({rows, row_values});
    case WeightFormat::F8_E4M3:
    case WeightFormat::F8_E5M2: return fp8_values(flat, f);
    default: break;
  }
  const auto blocks = flat.view({-1, info.block_bytes});
  const auto values = info.block_values == 32 ? small_blocks(f, blocks) : k_blocks(f, blocks);
  return values.view({rows, row_values});
}

at::Tensor DenseScratch::take(int64_t numel, at::ScalarType dtype, at::Device device) {
  if (!buffer_.defined() || buffer_.scalar_type() != dtype || buffer_.device() != device || buffer_.numel() < numel) {
    buffer_ = at::Tensor();  // the old one goes before the larger one comes
    buffer_ = at::empty({numel}, at::TensorOptions(dtype).device(device));
  }
  return buffer_.narrow(0, 0, numel);
}

namespace {

// Values dequantized per slice of rows: small float32 temporaries on the CPU; on a GPU large enough that a
// layer takes a few slices (each slice is a dozen kernel launches), still far below a large layer's size.
int64_t slice_values(const at::Device& device) { return device.is_cpu() ? int64_t(1) << 20 : int64_t(1) << 23; }

// The most common formats written straight into `out` (no float32 copy of the slice to pass over again), with
// the values the general path gives: Q8_0's d * q computed in float32 and rounded once to out's dtype; fp8's
// values, which every float type holds exactly. False where this LibTorch or format has no such path.
bool into_directly(WeightFormat f, const at::Tensor& bytes, const at::Tensor& out) {
  if (f == WeightFormat::Q8_0) {
    const auto blocks = bytes.contiguous().view({-1, plan::format_info(f).block_bytes});
    auto values = out.view({blocks.size(0), 32});
    at::mul_out(values, half_field(blocks, 0), blocks.narrow(1, 2, 32).view(at::kChar));
    return true;
  }
  if (f != WeightFormat::F8_E4M3 && f != WeightFormat::F8_E5M2) return false;
  const auto v = compat::float8_view(bytes, f == WeightFormat::F8_E5M2);
  if (v.defined()) out.copy_(v);
  return v.defined();
}

// The weight's values into `out` ([rows, row_values] contiguous, any float dtype), in float32 slice by slice,
// each scaled in float32 and then rounded to out's dtype: the values .to(dtype) of the whole would give.
void dequantize_into(const PackedWeight& w, const at::Tensor& out, int64_t row_values) {
  const int64_t rows = w.bytes.size(0);
  const int64_t step = std::max<int64_t>(1, slice_values(w.bytes.device()) / std::max<int64_t>(1, row_values));
  for (int64_t first = 0; first < rows; first += step) {
    const int64_t n = std::min(step, rows - first);
    const auto bytes = w.bytes.narrow(0, first, n);
    auto slice = out.narrow(0, first, n);
    // A scale is applied in float32 (a narrower out would round it first): straight in only for float32 then.
    if ((w.scale == 1.0f || out.scalar_type() == at::kFloat) && into_directly(w.format, bytes, slice)) {
      if (w.scale != 1.0f) slice.mul_(w.scale);
      continue;
    }
    auto v = dequantize_rows(w.format, bytes, row_values);
    if (w.scale != 1.0f) v = w.format == WeightFormat::F32 ? v * w.scale : v.mul_(w.scale);
    slice.copy_(v);
  }
}

int64_t values_per_row(const PackedWeight& w) {
  int64_t values = 1;
  for (const int64_t d : w.shape) values *= d;
  return w.bytes.size(0) ? values / w.bytes.size(0) : 0;
}

}  // namespace

at::Tensor PackedWeight::dequantize(at::ScalarType dtype) const {
  const int64_t row_values = values_per_row(*this);
  auto out = at::empty({bytes.size(0), row_values}, at::TensorOptions(dtype).device(bytes.device()));
  dequantize_into(*this, out, row_values);
  return out.view(shape);
}

at::Tensor PackedWeight::dequantize_for_call(at::ScalarType dtype) const {
  if (!scratch) return dequantize(dtype);
  const int64_t row_values = values_per_row(*this);
  const auto out = scratch->take(bytes.size(0) * row_values, dtype, bytes.device()).view({bytes.size(0), row_values});
  dequantize_into(*this, out, row_values);
  return out.view(shape);
}

PackedWeight PackedWeight::rows(int64_t first, int64_t count) const {
  PackedWeight p = *this;
  p.shape[0] = count;
  p.bytes = bytes.narrow(0, first, count);
  return p;
}

PackedWeight PackedWeight::to(at::Device device) const {
  PackedWeight p = *this;
  p.bytes = bytes.to(device);
  return p;
}

uint64_t PackedWeight::nbytes() const { return uint64_t(bytes.numel()); }

PackedWeight cat_rows(const std::vector<PackedWeight>& parts) {
  PackedWeight out = parts.at(0);
  std::vector<at::Tensor> bytes;
  out.shape[0] = 0;
  for (const auto& p : parts) {
    if (p.format != out.format || p.scale != out.scale)
      throw std::logic_error("cat_rows: parts of one fused layer must share format and scale");
    bytes.push_back(p.bytes);
    out.shape[0] += p.shape[0];
  }
  out.bytes = at::cat(bytes, 0);
  return out;
}

uint8_t float_to_e4m3fn(float x) {
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  if (std::isnan(x)) return 0x7F;
  const float a = std::fmin(std::fabs(x), 448.0f);
  if (a < std::ldexp(1.0f, -6)) return sign | uint8_t(std::nearbyint(a * 512.0f));  // subnormal; 8 is the least normal
  int e = 0;
  const float f = std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)
  const int m = int(std::nearbyint((2 * f - 1) * 8));  // (1 + m/8) * 2^(e - 1), m = 8 carries into the exponent
  return sign | uint8_t(((e - 1 + 7) << 3) + m);
}

PackedWeight quantize_fp8(const at::Tensor& weight, at::Device device) {
  const auto w = weight.to(at::kFloat).contiguous();
  const float amax = w.numel() ? w.abs().max().item<float>() : 0.0f;
  const float s = amax > 0 ? amax / 448.0f : 1.0f;
  auto bytes = at::empty({w.size(0), w.numel() / std::max<int64_t>(w.size(0), 1)}, at::kByte);
  const float* in = w.data_ptr<float>();
  uint8_t* out = bytes.data_ptr<uint8_t>();
  at::parallel_for(0, w.numel(), 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = float_to_e4m3fn(in[i] / s);
  });
  return {WeightFormat::F8_E4M3, w.sizes().vec(), bytes.to(device), s};
}

}  // namespace studio::io

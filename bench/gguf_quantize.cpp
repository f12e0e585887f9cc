#include "gguf_quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <vector>

#include <c10/util/Half.h>

#include "io/gguf/gguf_file.h"
#include "io/safetensors/safetensors_file.h"
#include "io/weights/weights.h"

namespace studio::bench {

namespace {

void put_half(uint8_t* at, float v) {
  const c10::Half h(v);
  std::memcpy(at, &h, 2);
}

// 32 values: an fp16 scale d = max|x| / 127, then round(x / d) as int8.
void q8_0(const float* x, uint8_t* out) {
  float amax = 0;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127;
  put_half(out, d);
  for (int j = 0; j < 32; ++j) out[2 + j] = uint8_t(int8_t(d > 0 ? std::lround(x[j] / d) : 0));
}

// 256 values: 8 sub-blocks of 32, each w = d * sc * q - dmin * m with 6-bit sc and m and 4-bit q.
void q4_k(const float* x, uint8_t* out) {
  float scale[8], min[8];
  for (int s = 0; s < 8; ++s) {
    const auto [lo, hi] = std::minmax_element(x + 32 * s, x + 32 * s + 32);
    min[s] = std::min(0.0f, *lo);
    scale[s] = (*hi - min[s]) / 15;
  }
  const float d = *std::max_element(scale, scale + 8) / 63, dmin = -*std::min_element(min, min + 8) / 63;
  uint8_t sc[8], mn[8];
  for (int s = 0; s < 8; ++s) {
    sc[s] = uint8_t(d > 0 ? std::min(63L, std::lround(scale[s] / d)) : 0);
    mn[s] = uint8_t(dmin > 0 ? std::min(63L, std::lround(-min[s] / dmin)) : 0);
  }
  std::memset(out, 0, 144);
  put_half(out, d);
  put_half(out + 2, dmin);
  uint8_t* k = out + 4;  // ggml's get_scale_min_k4, inverted
  for (int s = 0; s < 8; ++s) {
    if (s < 4) {
      k[s] |= sc[s], k[s + 4] |= mn[s];
    } else {
      k[s + 4] = uint8_t((sc[s] & 15) | ((mn[s] & 15) << 4));
      k[s - 4] |= uint8_t((sc[s] >> 4) << 6), k[s] |= uint8_t((mn[s] >> 4) << 6);
    }
  }
  for (int s = 0; s < 8; ++s)
    for (int l = 0; l < 32; ++l) {
      const float step = d * sc[s];
      const long q = step > 0 ? std::lround((x[32 * s + l] + dmin * mn[s]) / step) : 0;
      out[16 + 32 * (s / 2) + l] |= uint8_t(std::clamp(q, 0L, 15L) << (s % 2 ? 4 : 0));
    }
}

}  // namespace

void write_gguf_transformer(const std::string& safetensors, const std::string& gguf, plan::WeightFormat format,
                            const std::string& architecture) {
  const auto in = io::SafetensorsFile::open(safetensors);
  const auto& info = plan::format_info(format);
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<io::GgufTensorToWrite> out;
  std::map<std::string, std::vector<int32_t>> shapes;  // city96's way with more than GGUF's 4 dimensions
  for (const auto& t : in->tensors()) {
    const auto values = io::to_tensor(in, t, at::kFloat, at::kCPU).contiguous();
    const bool quantize = t.shape.size() == 2 && t.shape[1] % info.block_values == 0 && values.numel() > 1024;
    const auto f = quantize ? format : plan::WeightFormat::F32;
    bytes.emplace_back(plan::format_bytes(f, uint64_t(values.numel())));
    const float* x = values.data_ptr<float>();
    if (!quantize) {
      std::memcpy(bytes.back().data(), x, bytes.back().size());
    } else {
      for (int64_t b = 0; b < values.numel() / info.block_values; ++b)
        (format == plan::WeightFormat::Q8_0 ? q8_0 : q4_k)(x + b * info.block_values,
                                                            bytes.back().data() + b * info.block_bytes);
    }
    auto shape = t.shape;
    if (shape.size() > 4) {
      shapes["comfy.gguf.orig_shape." + t.name] = std::vector<int32_t>(shape.begin(), shape.end());
      shape = {shape[0], values.numel() / shape[0]};
    }
    out.push_back({t.name, f, shape, nullptr});
  }
  for (size_t i = 0; i < out.size(); ++i) out[i].data = bytes[i].data();
  io::write_gguf(gguf, out, {{"general.architecture", architecture}}, {}, shapes);
}

}  // namespace studio::bench

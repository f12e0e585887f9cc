// Quantized weights turned back into numbers: ggml's block formats against the reference files (gguf-py's
// dequantization of the golden GGUFs) and, for the K-quants no Python tool writes, against llama.cpp's
// documented block layouts walked one value at a time (dequantize_row_* of ggml-quants.c) over random blocks;
// fp8 both ways, and the fp8 that --quantize stores against torch's own conversion in the scaled golden file.
#include <cmath>
#include <cstring>
#include <random>

#include <ATen/ops/cat.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/from_blob.h>

#include "io/gguf/gguf_file.h"
#include "io/weights/packed_weight.h"
#include "io/weights/weights.h"
#include "support.h"
#include "tensor_support.h"

using namespace studio;
using plan::WeightFormat;

namespace {

float half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  const int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  const float v = e == 0 ? std::ldexp(float(m), -24) : std::ldexp(float(m | 1024), e - 25);
  return s ? -v : v;
}

// One block's values, as ggml-quants.c's dequantize_row_* loops write them.
std::vector<float> reference_block(WeightFormat f, const uint8_t* x) {
  std::vector<float> y;
  switch (f) {
    case WeightFormat::Q8_0:
      for (int j = 0; j < 32; ++j) y.push_back(half(x) * float(int8_t(x[2 + j])));
      break;
    case WeightFormat::Q4_0: case WeightFormat::Q4_1: case WeightFormat::Q5_0: case WeightFormat::Q5_1: {
      const bool min = f == WeightFormat::Q4_1 || f == WeightFormat::Q5_1;
      const bool five = f == WeightFormat::Q5_0 || f == WeightFormat::Q5_1;
      const uint8_t* qh_at = x + (min ? 4 : 2);
      uint32_t qh = 0;
      if (five) std::memcpy(&qh, qh_at, 4);
      const uint8_t* qs = qh_at + (five ? 4 : 0);
      y.resize(32);
      for (int j = 0; j < 16; ++j) {
        int x0 = qs[j] & 15, x1 = qs[j] >> 4;
        if (five) x0 |= ((qh >> j) << 4) & 16, x1 |= (qh >> (j + 12)) & 16;
        const int offset = min ? 0 : five ? 16 : 8;
        y[j] = float(x0 - offset) * half(x) + (min ? half(x + 2) : 0.0f);
        y[j + 16] = float(x1 - offset) * half(x) + (min ? half(x + 2) : 0.0f);
      }
      break;
    }
    case WeightFormat::Q2_K: {
      const uint8_t *sc = x, *q = x + 16;
      const float d = half(x + 80), dmin = half(x + 82);
      int is = 0;
      for (int n = 0; n < 256; n += 128, q += 32)
        for (int shift = 0; shift < 8; shift += 2)
          for (int h = 0; h < 2; ++h, ++is)
            for (int l = 0; l < 16; ++l)
              y.push_back(d * float(sc[is] & 15) * float((q[l + 16 * h] >> shift) & 3) - dmin * float(sc[is] >> 4));
      break;
    }
    case WeightFormat::Q3_K: {
      const uint8_t *hm = x, *q = x + 32, *s = x + 96;
      const float d = half(x + 108);
      int8_t scales[16];
      for (int k = 0; k < 16; ++k) {
        const int low = k < 8 ? s[k] & 15 : s[k - 8] >> 4, high = (s[8 + k % 4] >> (2 * (k / 4))) & 3;
        scales[k] = int8_t((low | (high << 4)) - 32);
      }
      int is = 0;
      uint8_t m = 1;
      for (int n = 0; n < 256; n += 128, q += 32)
        for (int shift = 0; shift < 8; shift += 2, m <<= 1)
          for (int h = 0; h < 2; ++h, ++is)
            for (int l = 0; l < 16; ++l)
              y.push_back(d * scales[is] * float(((q[l + 16 * h] >> shift) & 3) - ((hm[l + 16 * h] & m) ? 0 : 4)));
      break;
    }
    case WeightFormat::Q4_K: case WeightFormat::Q5_K: {
      const bool five = f == WeightFormat::Q5_K;
      const float d = half(x), dmin = half(x + 2);
      const uint8_t *s = x + 4, *qh = x + 16, *ql = x + (five ? 48 : 16);
      auto scale_min = [&](int j, int& sc, int& mn) {
        if (j < 4) sc = s[j] & 63, mn = s[j + 4] & 63;
        else sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4), mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
      };
      for (int j = 0, is = 0; j < 256; j += 64, ql += 32, is += 2) {
        int sc1, m1, sc2, m2;
        scale_min(is, sc1, m1);
        scale_min(is + 1, sc2, m2);
        const uint8_t u1 = uint8_t(1 << is), u2 = uint8_t(2 << is);
        for (int l = 0; l < 32; ++l)
          y.push_back(d * sc1 * float((ql[l] & 15) + (five && (qh[l] & u1) ? 16 : 0)) - dmin * m1);
        for (int l = 0; l < 32; ++l)
          y.push_back(d * sc2 * float((ql[l] >> 4) + (five && (qh[l] & u2) ? 16 : 0)) - dmin * m2);
      }
      break;
    }
    case WeightFormat::Q6_K: {
      const uint8_t *ql = x, *qh = x + 128;
      const int8_t* sc = reinterpret_cast<const int8_t*>(x + 192);
      const float d = half(x + 208);
      y.resize(256);
      for (int n = 0; n < 256; n += 128, ql += 64, qh += 32, sc += 8)
        for (int l = 0; l < 32; ++l) {
          const int is = l / 16;
          y[n + l] = d * sc[is] * float(((ql[l] & 15) | (((qh[l] >> 0) & 3) << 4)) - 32);
          y[n + l + 32] = d * sc[is + 2] * float(((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) - 32);
          y[n + l + 64] = d * sc[is + 4] * float(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
          y[n + l + 96] = d * sc[is + 6] * float(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
        }
      break;
    }
    default: ADD_FAILURE() << "no reference for " << plan::format_info(f).name;
  }
  return y;
}

// Random blocks whose fp16 fields (every 2-byte d, dmin, m the layout has) hold modest finite numbers.
std::vector<uint8_t> random_blocks(WeightFormat f, int blocks, std::mt19937& rng) {
  const auto& info = plan::format_info(f);
  std::vector<uint8_t> b(size_t(blocks) * info.block_bytes);
  for (auto& v : b) v = uint8_t(rng());
  std::vector<int> halves;  // byte offsets of the fp16 fields
  switch (f) {
    case WeightFormat::Q4_1: case WeightFormat::Q5_1: case WeightFormat::Q4_K: case WeightFormat::Q5_K: halves = {0, 2}; break;
    case WeightFormat::Q2_K: halves = {80, 82}; break;
    case WeightFormat::Q3_K: halves = {108}; break;
    case WeightFormat::Q6_K: halves = {208}; break;
    default: halves = {0};
  }
  for (int i = 0; i < blocks; ++i)
    for (int at : halves) {
      const uint16_t h = uint16_t(0x2000 + rng() % 0x1000) | uint16_t(rng() % 2 ? 0x8000 : 0);  // about 2^-7 .. 2^-5
      std::memcpy(&b[size_t(i) * info.block_bytes + at], &h, 2);
    }
  return b;
}

}  // namespace

TEST(Dequantize, every_block_format_walks_its_values_as_ggml_does) {
  std::mt19937 rng(7);
  for (auto f : {WeightFormat::Q8_0, WeightFormat::Q5_0, WeightFormat::Q5_1, WeightFormat::Q4_0, WeightFormat::Q4_1,
                 WeightFormat::Q6_K, WeightFormat::Q5_K, WeightFormat::Q4_K, WeightFormat::Q3_K, WeightFormat::Q2_K}) {
    const auto& info = plan::format_info(f);
    const int rows = 3, blocks_per_row = 2;
    auto bytes = random_blocks(f, rows * blocks_per_row, rng);
    const auto t = at::from_blob(bytes.data(), {rows, int64_t(blocks_per_row) * info.block_bytes}, at::kByte);
    const auto got = io::dequantize_rows(f, t, int64_t(blocks_per_row) * info.block_values).contiguous();
    std::vector<float> want;
    for (int b = 0; b < rows * blocks_per_row; ++b) {
      const auto v = reference_block(f, &bytes[size_t(b) * info.block_bytes]);
      want.insert(want.end(), v.begin(), v.end());
    }
    ASSERT_EQ(size_t(got.numel()), want.size()) << info.name;
    const float* g = got.data_ptr<float>();
    size_t differ = 0;
    for (size_t i = 0; i < want.size(); ++i) differ += g[i] != want[i];
    EXPECT_EQ(differ, 0u) << info.name << ": " << differ << " of " << want.size() << " values differ";
  }
}

// A layer's weight as a call takes it (PackedWeight::dequantize_for_call): slice by slice into the buffer the
// model's weights share, Q8_0 and fp8 written straight in. The same values as the whole weight dequantized in
// float32 and then rounded, to the bit, in float32 and in bfloat16; rows enough for several slices (2^20 values on
// the CPU); and two weights through one buffer, the larger first, in the same memory.
TEST(Dequantize, a_call_takes_the_same_values_in_the_shared_buffer) {
  std::mt19937 rng(11);
  const auto scratch = std::make_shared<io::DenseScratch>();
  for (auto f : {WeightFormat::Q8_0, WeightFormat::Q4_K, WeightFormat::F8_E4M3, WeightFormat::F8_E5M2}) {
    const auto& info = plan::format_info(f);
    const int64_t rows = 80, row_values = 16384;  // 1.25 slices of 2^20 values
    const int64_t row_bytes = row_values / info.block_values * info.block_bytes;
    auto bytes = f == WeightFormat::Q8_0 || f == WeightFormat::Q4_K
                     ? random_blocks(f, int(rows * row_values / info.block_values), rng)
                     : std::vector<uint8_t>(size_t(rows * row_bytes));
    if (f == WeightFormat::F8_E4M3 || f == WeightFormat::F8_E5M2)
      for (auto& b : bytes) b = uint8_t(rng() % 0x70) | uint8_t(rng() % 2 ? 0x80 : 0);  // finite values
    io::PackedWeight w{f, {rows, row_values}, at::from_blob(bytes.data(), {rows, row_bytes}, at::kByte).clone(),
                       f == WeightFormat::F8_E4M3 ? 0.37f : 1.0f, scratch};
    auto whole = io::dequantize_rows(f, w.bytes, row_values);
    if (w.scale != 1.0f) whole = whole * w.scale;
    for (auto dtype : {at::kFloat, at::kBFloat16}) {
      const auto got = w.dequantize_for_call(dtype);
      EXPECT_EQ(got.sizes().vec(), w.shape) << info.name;
      EXPECT_TRUE(at::equal(got, whole.to(dtype))) << info.name << " " << dtype;
      EXPECT_TRUE(at::equal(w.dequantize(dtype), whole.to(dtype))) << info.name << " " << dtype;
    }
  }
  // The buffer is the largest weight's: a smaller one after it takes the same memory.
  std::vector<uint8_t> small = random_blocks(WeightFormat::Q8_0, 4, rng), large = random_blocks(WeightFormat::Q8_0, 64, rng);
  io::PackedWeight a{WeightFormat::Q8_0, {8, 512}, at::from_blob(large.data(), {8, 16 * 34}, at::kByte), 1.0f, scratch};
  io::PackedWeight b{WeightFormat::Q8_0, {2, 64}, at::from_blob(small.data(), {2, 2 * 34}, at::kByte), 1.0f, scratch};
  const void* first = a.dequantize_for_call(at::kFloat).data_ptr();
  EXPECT_EQ(b.dequantize_for_call(at::kFloat).data_ptr(), first);
  EXPECT_TRUE(at::equal(b.dequantize_for_call(at::kFloat), b.dequantize(at::kFloat)));
}

// Hand-made Q4_K block: d = 1, dmin = 0.5, sub-block 0's scale 3 and min 2, sub-block 5's (a 6-bit pair split
// over three bytes) scale 0b100101 = 37 and min 0b010110 = 22, values 7 and 9: w = d * scale * q - dmin * min.
TEST(Dequantize, a_hand_made_q4_k_block_gives_the_documented_values) {
  std::vector<uint8_t> b(144, 0);
  const uint16_t one = 0x3C00, half_ = 0x3800;
  std::memcpy(&b[0], &one, 2);
  std::memcpy(&b[2], &half_, 2);
  uint8_t* s = &b[4];
  s[0] = 3, s[4] = 2;                          // sub-block 0: scale, min
  s[9] = uint8_t((37 & 15) | ((22 & 15) << 4));  // sub-block 5: low nibbles in byte 5 + 4
  s[1] |= uint8_t((37 >> 4) << 6);             // high bits in bytes 5 - 4 and 5
  s[5] |= uint8_t((22 >> 4) << 6);
  b[16] = 7;              // value 0: low nibble of qs[0] (sub-block 0)
  b[16 + 64] = 9 << 4;    // value 160: high nibble of qs[64] (sub-block 5)
  const auto w = io::dequantize_rows(WeightFormat::Q4_K, at::from_blob(b.data(), {1, 144}, at::kByte), 256);
  EXPECT_EQ(w[0][0].item<float>(), 1.0f * 3 * 7 - 0.5f * 2);
  EXPECT_EQ(w[0][1].item<float>(), -0.5f * 2);
  EXPECT_EQ(w[0][160].item<float>(), 1.0f * 37 * 9 - 0.5f * 22);
}

// The other K-quants, each a hand-made block whose values are worked out from llama.cpp's block layouts
// (ggml-common.h's block_q*_K) by hand, not by walking them as the reference above does: a block of zeros but for
// the fields named, and the values those give.
namespace {

void put_half(std::vector<uint8_t>& b, size_t at, uint16_t h) { std::memcpy(&b[at], &h, 2); }

std::vector<float> one_block(WeightFormat f, std::vector<uint8_t>& b) {
  const auto w = io::dequantize_rows(f, at::from_blob(b.data(), {1, int64_t(b.size())}, at::kByte), 256).contiguous();
  return {w.data_ptr<float>(), w.data_ptr<float>() + 256};
}

}  // namespace

// Q2_K: scales[16] (scale in the low 4 bits, min in the high), qs[64] (2 bits each), d, dmin; w = d sc q - dmin m.
// Sub-block 0 (values 0-15): scale 5, min 3; sub-block 15 (values 240-255; qs byte 16 + 32 + 16 + l, bits 6-7).
TEST(Dequantize, a_hand_made_q2_k_block_gives_the_documented_values) {
  std::vector<uint8_t> b(84, 0);
  put_half(b, 80, 0x3C00), put_half(b, 82, 0x3800);  // d = 1, dmin = 0.5
  b[0] = (3 << 4) | 5;
  b[15] = (1 << 4) | 7;
  b[16 + 0] = 2;           // value 0: q = 2
  b[16 + 52] = 3 << 6;     // value 244 (half 1, shift 6, second 16, l = 4): q = 3
  const auto y = one_block(WeightFormat::Q2_K, b);
  EXPECT_EQ(y[0], 5.0f * 2 - 0.5f * 3);
  EXPECT_EQ(y[1], -0.5f * 3);
  EXPECT_EQ(y[244], 7.0f * 3 - 0.5f * 1);
  EXPECT_EQ(y[100], 0.0f);  // sub-block 6: scale and min 0
}

// Q3_K: hmask[32], qs[64], scales[12] (sixteen 6-bit scales, less 32), d; q = low 2 bits - (high bit clear ? 4 : 0).
TEST(Dequantize, a_hand_made_q3_k_block_gives_the_documented_values) {
  std::vector<uint8_t> b(110, 0);
  put_half(b, 108, 0x3400);  // d = 0.25
  uint8_t* sc = &b[96];
  sc[0] = 13, sc[8] = 1;                   // scale 0: 0b01'1101 = 29, less 32: -3
  sc[5] |= 2 << 4, sc[9] |= 3 << 6;        // scale 13: low bits in byte 13 - 8's high nibble, high in byte 8 + 13 % 4
  b[0] = 1;                                // hmask: value 0's high bit
  b[32 + 0] = 1;                           // value 0: low bits 1
  b[23] = 1 << 6, b[32 + 55] = 2 << 4;     // value 215 (half 1, shift 4, second 16, l = 7): bit 6 of hmask, low bits 2
  const auto y = one_block(WeightFormat::Q3_K, b);
  EXPECT_EQ(y[0], 0.25f * -3 * 1);
  EXPECT_EQ(y[1], 0.25f * -3 * -4);        // high bit clear: 0 - 4
  EXPECT_EQ(y[215], 0.25f * (50 - 32) * 2);
}

// Q5_K: d, dmin, scales[12] (as Q4_K's), qh[32] (the fifth bits), qs[128]; w = d sc q - dmin m.
TEST(Dequantize, a_hand_made_q5_k_block_gives_the_documented_values) {
  std::vector<uint8_t> b(176, 0);
  put_half(b, 0, 0x3C00), put_half(b, 2, 0x3800);  // d = 1, dmin = 0.5
  uint8_t* s = &b[4];
  s[0] = 3, s[4] = 2;                             // sub-block 0: scale 3, min 2
  s[11] = (49 & 15) | ((35 & 15) << 4);           // sub-block 7: scale 0b11'0001 = 49, min 0b10'0011 = 35
  s[3] |= (49 >> 4) << 6, s[7] |= (35 >> 4) << 6;
  b[48 + 0] = 7, b[16 + 0] = 1;                   // value 0: 7, fifth bit set: 23
  b[48 + 96 + 5] = 9 << 4, b[16 + 5] = 2 << 6;    // value 229 (sub-block 7, l = 5): 9, fifth bit set: 25
  const auto y = one_block(WeightFormat::Q5_K, b);
  EXPECT_EQ(y[0], 1.0f * 3 * 23 - 0.5f * 2);
  EXPECT_EQ(y[229], 1.0f * 49 * 25 - 0.5f * 35);
  EXPECT_EQ(y[32], -0.5f * 0);                    // sub-block 1: scale and min 0
}

// Q6_K: ql[128] (low 4 bits), qh[64] (high 2), scales[16] (int8), d; q = the 6 bits - 32, w = d sc q.
TEST(Dequantize, a_hand_made_q6_k_block_gives_the_documented_values) {
  std::vector<uint8_t> b(210, 0);
  put_half(b, 208, 0x3800);  // d = 0.5
  b[192 + 0] = uint8_t(int8_t(-3));   // scale of values 0-15
  b[192 + 15] = 7;                    // scale of values 240-255
  b[0] = 5, b[128] = 2;               // value 0: low 5, high 2: 37 - 32
  b[64 + 32 + 20] = 0xA << 4;         // value 244 (half 1, fourth quarter, l = 20): low bits in ql's high nibble
  b[128 + 32 + 20] = 1 << 6;          // and its high bits 6-7 of qh: 26 - 32
  const auto y = one_block(WeightFormat::Q6_K, b);
  EXPECT_EQ(y[0], 0.5f * -3 * 5);
  EXPECT_EQ(y[1], 0.5f * -3 * -32);
  EXPECT_EQ(y[244], 0.5f * 7 * -6);
}

TEST(Dequantize, golden_gguf_weights_equal_gguf_py) {
  for (const char* v : {"q8_0", "q4_0"}) {
    const std::string file = test::golden_case("flux_gguf_tiny") + "/transformer-" +
                             (std::string(v) == "q8_0" ? "Q8_0" : "Q4_0") + ".gguf";
    const auto f = io::GgufFile::open(file);
    const auto* t = f->find("double_blocks.0.img_attn.qkv.weight");
    ASSERT_NE(t, nullptr);
    io::StoredTensor stored{f, file, t->name, f->data(*t), t->format, "", t->shape};
    const auto w = stored.packed().dequantize(at::kFloat);
    EXPECT_EQ(test::max_abs_diff(w, test::golden_tensor("flux_gguf_tiny", std::string("dequant_") + v)), 0.0) << v;
  }
}

TEST(Dequantize, golden_fp8_weights_plain_and_scaled) {
  for (const char* v : {"fp8", "fp8_scaled"}) {
    const std::string file = test::golden_case("flux_fp8_tiny") + "/transformer-fp8_e4m3fn" +
                             (std::string(v) == "fp8" ? "" : "_scaled") + ".safetensors";
    auto w = io::WeightSet::open_file(file, {"flux"}, [](const std::set<std::string>&) { return plan::TensorRenames{}; });
    const auto lw = w.take_linear("double_blocks.0.img_attn.qkv.weight", {96, 32}, at::kFloat, at::kCPU);
    ASSERT_TRUE(lw.packed.defined()) << v << ": an fp8 weight is kept in fp8";
    EXPECT_EQ(lw.packed.nbytes(), 96u * 32u);
    EXPECT_EQ(test::max_abs_diff(lw.packed.dequantize(at::kFloat), test::golden_tensor("flux_fp8_tiny", std::string("dequant_") + v)),
              0.0)
        << v;
  }
}

TEST(Fp8, every_e4m3fn_value_converts_back_to_itself_and_ties_go_to_even) {
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7F) == 0x7F) continue;  // NaN
    uint8_t byte = uint8_t(c);
    const float v = io::dequantize_rows(WeightFormat::F8_E4M3, at::from_blob(&byte, {1, 1}, at::kByte), 1).item<float>();
    EXPECT_EQ(io::float_to_e4m3fn(v), c == 0x80 ? 0x80 : c) << "code " << c << " value " << v;
  }
  EXPECT_EQ(io::float_to_e4m3fn(1.0625f), 0x38);   // halfway between 1 (even) and 1.125: 1
  EXPECT_EQ(io::float_to_e4m3fn(1.1875f), 0x3A);   // halfway between 1.125 and 1.25 (even): 1.25
  EXPECT_EQ(io::float_to_e4m3fn(std::ldexp(1.5f, -10)), 0x01);  // 0.75 of the least subnormal: up to it
  EXPECT_EQ(io::float_to_e4m3fn(1e6f), 0x7E);      // saturates at 448
  EXPECT_EQ(io::float_to_e4m3fn(-1e6f), 0xFE);
}

// --quantize fp8 stores e4m3fn(W / s), s = max|W| / 448: on flux_words_tiny's block-0 q, k and v joined as BFL
// joins them, the same bytes and scale torch wrote into the scaled golden file.
TEST(Fp8, quantizing_a_float_weight_matches_torchs_scaled_fp8) {
  auto folder = io::WeightSet::open(test::golden_case("flux_words_tiny") + "/transformer", "diffusion_pytorch_model");
  std::vector<at::Tensor> qkv;
  for (const char* p : {"to_q", "to_k", "to_v"})
    qkv.push_back(folder.take(std::string("transformer_blocks.0.attn.") + p + ".weight", {32, 32}, at::kFloat, at::kCPU));
  const auto mine = io::quantize_fp8(at::cat(qkv, 0), at::kCPU);
  const auto file = io::SafetensorsFile::open(test::golden_case("flux_fp8_tiny") + "/transformer-fp8_e4m3fn_scaled.safetensors");
  const auto* w = file->find("double_blocks.0.img_attn.qkv.weight");
  const auto* s = file->find("double_blocks.0.img_attn.qkv.scale_weight");
  ASSERT_TRUE(w && s);
  float scale;
  std::memcpy(&scale, file->data(*s), 4);
  EXPECT_EQ(mine.scale, scale);
  EXPECT_EQ(std::memcmp(mine.bytes.contiguous().data_ptr<uint8_t>(), file->data(*w), 96 * 32), 0);
}

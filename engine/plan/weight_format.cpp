#include "plan/weight_format.h"

#include <array>
#include <cctype>

namespace studio::plan {

namespace {

// Block sizes from ggml's layouts (ggml-common.h): a K-quant super-block holds 256 values.
constexpr std::array<WeightFormatInfo, 15> kFormats{{
    {WeightFormat::F32, "F32", 1, 4, 0},
    {WeightFormat::F16, "F16", 1, 2, 1},
    {WeightFormat::BF16, "BF16", 1, 2, 30},
    {WeightFormat::F8_E4M3, "F8_E4M3", 1, 1, -1},
    {WeightFormat::F8_E5M2, "F8_E5M2", 1, 1, -1},
    {WeightFormat::Q8_0, "Q8_0", 32, 34, 8},
    {WeightFormat::Q5_0, "Q5_0", 32, 22, 6},
    {WeightFormat::Q5_1, "Q5_1", 32, 24, 7},
    {WeightFormat::Q4_0, "Q4_0", 32, 18, 2},
    {WeightFormat::Q4_1, "Q4_1", 32, 20, 3},
    {WeightFormat::Q6_K, "Q6_K", 256, 210, 14},
    {WeightFormat::Q5_K, "Q5_K", 256, 176, 13},
    {WeightFormat::Q4_K, "Q4_K", 256, 144, 12},
    {WeightFormat::Q3_K, "Q3_K", 256, 110, 11},
    {WeightFormat::Q2_K, "Q2_K", 256, 84, 10},
}};

}  // namespace

const WeightFormatInfo& format_info(WeightFormat f) {
  for (const auto& i : kFormats)
    if (i.format == f) return i;
  return kFormats[0];
}

std::optional<WeightFormat> weight_format_named(const std::string& name) {
  std::string upper;
  for (char c : name) upper += char(std::toupper(static_cast<unsigned char>(c)));
  for (const auto& i : kFormats)
    if (upper == i.name) return i.format;
  return std::nullopt;
}

std::optional<WeightFormat> weight_format_of_ggml_type(uint32_t type) {
  for (const auto& i : kFormats)
    if (i.ggml_type >= 0 && uint32_t(i.ggml_type) == type) return i.format;
  return std::nullopt;
}

std::string weight_format_names() {
  std::string out;
  for (const auto& i : kFormats) out += (out.empty() ? "" : ", ") + std::string(i.name);
  return out;
}

uint64_t format_bytes(WeightFormat f, uint64_t values) {
  const auto& i = format_info(f);
  return values / uint64_t(i.block_values) * uint64_t(i.block_bytes);
}

double format_bits(WeightFormat f) {
  const auto& i = format_info(f);
  return 8.0 * i.block_bytes / i.block_values;
}

bool is_block_quantized(WeightFormat f) { return format_info(f).block_values > 1; }

}  // namespace studio::plan

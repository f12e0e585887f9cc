// How a weight is stored: a float type, fp8, or one of ggml's block quantizations. The one table of their
// sizes: the GGUF reader checks tensors against it, the dequantizers read blocks by it, the plan counts a
// model's bytes with it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace studio::plan {

enum class WeightFormat { F32, F16, BF16, F8_E4M3, F8_E5M2, Q8_0, Q5_0, Q5_1, Q4_0, Q4_1, Q6_K, Q5_K, Q4_K, Q3_K, Q2_K };

struct WeightFormatInfo {
  WeightFormat format;
  const char* name;   // as GGUF tools and safetensors name it: "Q4_K", "F8_E4M3", ...
  int block_values;   // values per block (1 for the float types); a row holds a whole number of blocks
  int block_bytes;    // bytes per block
  int ggml_type;      // the type's number in a GGUF file; -1 where GGUF has none (fp8)
};

const WeightFormatInfo& format_info(WeightFormat f);
// Case-insensitive: "q4_k", "F8_E4M3". Empty when unknown.
std::optional<WeightFormat> weight_format_named(const std::string& name);
std::optional<WeightFormat> weight_format_of_ggml_type(uint32_t type);
// Every format's name, comma-separated, for messages that say what would work.
std::string weight_format_names();
// Bytes of `values` values; values must be a whole number of blocks (the caller has checked).
uint64_t format_bytes(WeightFormat f, uint64_t values);
// Bits per value, for the plan (4.5 for Q4_0).
double format_bits(WeightFormat f);
// ggml's blocks (Q8_0 ... Q2_K), as opposed to the float types that hold one value per element.
bool is_block_quantized(WeightFormat f);

}  // namespace studio::plan

// A folder's transformer written as one GGUF file (diffusers names) for the benches: every 2-D weight whose
// rows are whole blocks in Q8_0 or Q4_K (ggml's layouts, quantized by round to nearest as ggml's reference
// quantizers do, without their error search), the rest in F32, as city96's tools keep the small tensors.
#pragma once
#include <string>

#include "plan/weight_format.h"

namespace studio::bench {

void write_gguf_transformer(const std::string& safetensors, const std::string& gguf, plan::WeightFormat format,
                            const std::string& architecture);

}  // namespace studio::bench

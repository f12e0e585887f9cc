// The weights of one part of a model (transformer/, vae/, text_encoder/): a diffusers folder's safetensors
// (one file, or shards named by a *.safetensors.index.json), or one file standing for the part (--transformer
// FILE: GGUF or safetensors, in the diffusers layout or the family's original one). A model takes each weight
// it needs by name and shape; what is missing, misshapen or left over is an error naming file and tensor.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include "io/safetensors/safetensors_file.h"
#include "io/weights/packed_weight.h"
#include "plan/single_file.h"
#include "plan/weight_format.h"

namespace studio::plan {
struct LiveStrength;
}

namespace studio::io {

// Converts one stored tensor (F32, F16, BF16, F64, fp8, integers) to `dtype` on `device`. On the CPU and in
// the stored dtype the tensor shares the file's mapping (no copy).
at::Tensor to_tensor(const std::shared_ptr<const SafetensorsFile>& file, const TensorInfo& info,
                     at::ScalarType dtype, at::Device device);

// The weight format of a safetensors dtype; empty for the integer types.
std::optional<plan::WeightFormat> weight_format(DType d);

// One tensor as a file holds it.
struct StoredTensor {
  std::shared_ptr<const void> owner;  // keeps the file's mapping alive
  std::string file, name;             // for messages
  const uint8_t* data = nullptr;
  std::optional<plan::WeightFormat> format;  // empty for an integer tensor, which is never a weight
  std::string type_name;                     // as the file names its type: "Q4_K", "I64"
  std::vector<int64_t> shape;
  float scale = 1.0f;  // ComfyUI's scaled fp8: the value is float32(stored) * scale
  PackedWeight packed() const;  // a view of the file's bytes, on the CPU
};

// A change to one weight (a LoRA module's share of it), in float32: low-rank, weight += scale * up @ down; or,
// with `down` undefined, whole (a LoRA's .diff or .diff_b): weight += scale * up. With `strength` set (a LoRA kept
// beside its layers: plan::ModelFolder::loras_beside), `scale` leaves the LoRA's strength out and each use
// multiplies by strength->value.
struct WeightDelta {
  at::Tensor up, down;  // [rows, r] and [r, in] (or `up` of the weight's shape alone), float32 on the CPU
  double scale = 1.0;
  std::string source;  // "--lora style.safetensors, lora_unet_double_blocks_0_img_attn_qkv": for messages
  std::shared_ptr<plan::LiveStrength> strength;
  double factor() const;  // what the change is multiplied by now
};

// A linear layer's weight: dense in the run's dtype, or packed (fp8, GGUF blocks) and dequantized per call; a
// packed weight's changes are kept beside it (merging would make it dense), to be added to its output.
struct LinearWeight {
  at::Tensor dense;
  PackedWeight packed;
  std::vector<WeightDelta> beside;
};

class WeightSet {
 public:
  // `stem` is "diffusion_pytorch_model" (diffusers parts) or "model" (transformers parts).
  static WeightSet open(const std::string& part_dir, const std::string& stem);
  // One file for a part; `renames` (the family's, from the file's names) says where each weight is, and is
  // empty for a file in the diffusers layout. `gguf_architectures`: what a GGUF file may say it holds.
  static WeightSet open_file(const std::string& path, const std::vector<std::string>& gguf_architectures,
                             const std::function<plan::TensorRenames(const std::set<std::string>&)>& renames);
  // open_file() for the model folder's `part`, given by the flag of that name (--transformer FILE): its refusals,
  // and a weight the part's config.json asks for that the file lacks, name the flag and the part.
  static WeightSet open_part_file(const std::string& part, const std::string& path,
                                  const std::vector<std::string>& gguf_architectures,
                                  const std::function<plan::TensorRenames(const std::set<std::string>&)>& renames);
  // A set that makes weights instead of reading them: each take() draws a deterministic tensor of the
  // shape asked for (biases 0, 1-D weights 1, others N(0, 1/fan_in)). The built-in demo model is made
  // this way, so the weight layout has one home: the loaders.
  static WeightSet synthetic(uint64_t seed);
  bool makes_weights() const { return synthetic_ != nullptr; }  // a synthetic set: it has every weight asked for
  // Writes every weight a synthetic set has made, as float32.
  void save(const std::string& file) const;
  // Linear weights stored in a float format are kept in `f` instead (--quantize fp8).
  void store_linear_as(std::optional<plan::WeightFormat> f) { store_linear_as_ = f; }
  // Whether the linear layers made from this set multiply in float8 (--fp8_gemm; models/layers/layers.h).
  void gemm_in_fp8(bool on) { gemm_in_fp8_ = on; }
  bool gemm_in_fp8() const { return gemm_in_fp8_; }

  bool contains(const std::string& name) const { return where_.count(name) != 0; }
  // The weight, checked against the shape the config implies (`config_note` says from which fields).
  at::Tensor take(const std::string& name, const std::vector<int64_t>& shape, at::ScalarType dtype, at::Device device,
                  const std::string& config_note = "");
  // A linear layer's weight: packed when the file holds it quantized or store_linear_as() asks, else dense.
  LinearWeight take_linear(const std::string& name, const std::vector<int64_t>& shape, at::ScalarType dtype,
                           at::Device device, const std::string& config_note = "");
  // Changes merged into weights, by weight name, as each is taken (LoRAs: io/weights/lora.h); a linear weight the
  // file keeps quantized keeps them beside it instead (LinearWeight::beside). InputError at once, naming the
  // LoRA, for a change whose sizes do not fit its weight as the files hold it.
  void add_deltas(std::map<std::string, std::vector<WeightDelta>> deltas);
  // Dense linear weights keep their changes beside them too, unmerged (plan::ModelFolder::loras_beside); other
  // weights (norms, biases) merge theirs, and mark their LoRA's strength as merged.
  void keep_deltas_beside(bool on) { deltas_beside_ = on; }
  // Throws for weights nobody took, unless listed in `ignorable`.
  void expect_all_taken(const std::set<std::string>& ignorable = {}) const;
  const std::string& dir() const { return dir_; }
  std::vector<std::string> names() const;

 private:
  struct Slice {
    StoredTensor tensor;
    int64_t first = 0, rows = 0;
  };
  using Entry = std::vector<Slice>;  // a weight's rows, in order
  static Entry whole(StoredTensor t);
  const Entry& find(const std::string& name, const std::vector<int64_t>& shape, const std::string& config_note);
  at::Tensor read(const std::string& name, const std::vector<int64_t>& shape, at::ScalarType dtype, at::Device device,
                  const std::string& config_note);
  void check_deltas(const std::string& name, const std::vector<int64_t>& shape) const;  // their sizes fit the weight
  static std::vector<int64_t> stored_shape(const Entry& e);  // the rows of every slice, the rest of the first's
  at::Tensor synthetic_take(const std::string& name, const std::vector<int64_t>& shape);
  LinearWeight linear_as_kept(const std::string& name, const std::vector<int64_t>& shape, at::ScalarType dtype,
                              at::Device device, const std::string& config_note);
  std::string dir_;
  std::string part_;  // open_part_file()'s part: the set is that flag's file
  std::map<std::string, Entry> where_;
  std::set<std::string> taken_;
  std::optional<plan::WeightFormat> store_linear_as_;
  bool gemm_in_fp8_ = false;
  bool deltas_beside_ = false;
  std::shared_ptr<at::Generator> synthetic_;  // set for a synthetic set
  std::vector<std::pair<std::string, at::Tensor>> made_;
  std::map<std::string, std::vector<WeightDelta>> deltas_;
  std::shared_ptr<DenseScratch> scratch_ = std::make_shared<DenseScratch>();  // for the packed weights it gives
};

}  // namespace studio::io

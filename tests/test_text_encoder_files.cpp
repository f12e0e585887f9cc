// A text encoder from one file (--text_encoder FILE, --text_encoder_2 FILE) with the folder's config and
// tokenizer. wan21_tiny's umT5 written as a GGUF in llama.cpp's names (city96's encoder files: token_embd,
// enc.blk.N.attn_q, ffn_gate, attn_rel_b in every block) runs the whole job as the folder does; flux_words_tiny's
// T5 as a ComfyUI scaled fp8 file (prefix, scaled_fp8 marker, a scale_weight per linear layer) encodes as the
// float weights it stands for; and the files that do not belong are refused, named, before any work.
#include <cstring>
#include <filesystem>

#include <ATen/ops/from_blob.h>
#include <ATen/ops/tensor.h>

#include "io/gguf/gguf_file.h"
#include "io/safetensors/safetensors_file.h"
#include "io/weights/packed_weight.h"
#include "io/weights/tensor_file.h"
#include "plan/families/registry.h"
#include "process.h"
#include "tensor_support.h"
#include "text/encode/prompt.h"
#include "text/encode/t5_encoder.h"

using namespace studio;

namespace {

// transformers' T5 name -> llama.cpp's; "" for the tied copy of the token table, which those files leave out.
std::string llama_name(const std::string& name) {
  if (name == "shared.weight") return "token_embd.weight";
  if (name == "encoder.final_layer_norm.weight") return "enc.output_norm.weight";
  if (name == "encoder.embed_tokens.weight") return "";
  const std::pair<const char*, const char*> parts[] = {
      {"layer.0.SelfAttention.relative_attention_bias", "attn_rel_b"}, {"layer.0.SelfAttention.q", "attn_q"},
      {"layer.0.SelfAttention.k", "attn_k"}, {"layer.0.SelfAttention.v", "attn_v"},
      {"layer.0.SelfAttention.o", "attn_o"}, {"layer.0.layer_norm", "attn_norm"},
      {"layer.1.DenseReluDense.wi_0", "ffn_gate"}, {"layer.1.DenseReluDense.wi_1", "ffn_up"},
      {"layer.1.DenseReluDense.wo", "ffn_down"}, {"layer.1.layer_norm", "ffn_norm"}};
  const std::string block = "encoder.block.";
  const auto dot = name.find('.', block.size());
  for (const auto& [ours, theirs] : parts)
    if (name.compare(dot + 1, std::strlen(ours), ours) == 0)
      return "enc.blk." + name.substr(block.size(), dot - block.size()) + "." + theirs + ".weight";
  ADD_FAILURE() << "no llama.cpp name for " << name;
  return name;
}

// Every tensor of a folder's sharded text encoder, the files kept open for their bytes.
struct Shards {
  std::vector<std::shared_ptr<const io::SafetensorsFile>> files;
  std::vector<std::pair<const io::SafetensorsFile*, const io::TensorInfo*>> tensors;
  explicit Shards(const std::string& dir) {
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".safetensors") files.push_back(io::SafetensorsFile::open(e.path().string()));
    for (const auto& f : files)
      for (const auto& t : f->tensors()) tensors.push_back({f.get(), &t});
  }
};

test::Args wan_job(const std::string& save) {
  const auto g = test::golden_json("wan21_tiny");
  return {"--model", test::golden_case("wan21_tiny"), "--prompt", std::string(g["prompt"]), "--negative_prompt",
          std::string(g["negative_prompt"]), "--seed", std::to_string(int(g["seed"])), "--height",
          std::to_string(int(g["height"])), "--width", std::to_string(int(g["width"])), "--num_frames",
          std::to_string(int(g["num_frames"])), "--num_inference_steps", std::to_string(int(g["num_inference_steps"])),
          "--guidance_scale", std::to_string(double(g["guidance_scale"])), "--max_sequence_length",
          std::to_string(int(g["max_sequence_length"])), "--save_tensors", save};
}

void write_umt5_gguf(const std::string& path, const std::string& architecture, const std::string& leave_out = "") {
  const Shards shards(test::golden_case("wan21_tiny") + "/text_encoder");
  std::vector<io::GgufTensorToWrite> out;
  for (const auto& [file, t] : shards.tensors) {
    const std::string name = llama_name(t->name);
    if (name.empty() || name == leave_out) continue;
    EXPECT_EQ(t->dtype, io::DType::F32) << t->name;
    out.push_back({name, plan::WeightFormat::F32, t->shape, file->data(*t)});
  }
  io::write_gguf(path, out, {{"general.architecture", architecture}});
}

}  // namespace

TEST(TextEncoderFile, a_umt5_gguf_in_llama_cpp_names_runs_as_the_folder) {
  test::TempDir tmp;
  const std::string file = tmp.path("umt5-tiny-encoder-F32.gguf"), out = tmp.path("run.safetensors");
  write_umt5_gguf(file, "t5encoder");
  const auto r = test::run(test::bin("dit-launch"), wan_job(out) + test::Args{"--text_encoder", file}, 180000);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(test::contains(r.err, "encoding with " + file)) << r.err;
  io::TensorFile run(out, "run");
  EXPECT_LT(test::max_abs_diff(run.get("prompt_embeds", 3, ""), test::golden_tensor("wan21_tiny", "prompt_embeds")),
            test::kCallTolerance);
  EXPECT_LT(test::max_abs_diff(run.get("final_latents", 5, ""), test::golden_tensor("wan21_tiny", "final_latents")),
            test::kRunTolerance);
}

// The fp8 file encodes as a float file of the values it stands for, read through the same path: names under
// ComfyUI's prefix, the marker skipped, each scale folded into its layer.
TEST(TextEncoderFile, a_scaled_fp8_t5_encodes_as_the_values_it_stands_for) {
  test::TempDir tmp;
  auto model = plan::read_model_folder(test::golden_case("flux_words_tiny"));
  const Shards shards(test::golden_case("flux_words_tiny") + "/text_encoder_2");
  std::vector<io::TensorToWrite> fp8_rows, float_rows;
  std::vector<at::Tensor> keep;  // the bytes the rows point at
  std::vector<float> scales;
  scales.reserve(shards.tensors.size());
  const std::string prefix = "text_encoders.t5xxl.transformer.";
  for (const auto& [file, t] : shards.tensors) {
    const bool linear = t->shape.size() == 2 && t->name.find("relative_attention_bias") == std::string::npos &&
                        t->name != "shared.weight" && t->name != "encoder.embed_tokens.weight";
    if (!linear) {
      fp8_rows.push_back({prefix + t->name, t->dtype, t->shape, file->data(*t)});
      float_rows.push_back({t->name, t->dtype, t->shape, file->data(*t)});
      continue;
    }
    const auto w = at::from_blob(const_cast<uint8_t*>(file->data(*t)), t->shape, at::kFloat);
    const auto packed = io::quantize_fp8(w, at::kCPU);
    keep.push_back(packed.bytes.contiguous());
    fp8_rows.push_back({prefix + t->name, io::DType::F8_E4M3, t->shape, keep.back().data_ptr()});
    scales.push_back(packed.scale);
    const std::string layer = t->name.substr(0, t->name.size() - 7);  // less ".weight"
    fp8_rows.push_back({prefix + layer + ".scale_weight", io::DType::F32, {}, &scales.back()});
    keep.push_back(packed.dequantize(at::kFloat).contiguous());
    float_rows.push_back({t->name, io::DType::F32, t->shape, keep.back().data_ptr()});
  }
  const uint8_t none = 0;
  fp8_rows.push_back({"scaled_fp8", io::DType::F8_E4M3, {0}, &none});
  io::write_safetensors(tmp.path("t5xxl_fp8_e4m3fn_scaled.safetensors"), fp8_rows);
  io::write_safetensors(tmp.path("t5xxl_values.safetensors"), float_rows);

  const auto ids = at::tensor(std::vector<int64_t>{37, 5, 120, 9, 1}, at::kLong).view({1, 5});
  auto encode = [&](const std::string& file) {
    model.weight_files["text_encoder_2"] = file;
    auto weights = text::encoder_weights(model, model.t5_part());
    return text::T5Encoder::load(weights, *model.text_encoder, at::kFloat, at::kCPU)->forward(ids);
  };
  const auto fp8 = encode(tmp.path("t5xxl_fp8_e4m3fn_scaled.safetensors"));
  const auto values = encode(tmp.path("t5xxl_values.safetensors"));
  EXPECT_LT(test::max_abs_diff(fp8, values), 1e-5);
  model.weight_files.clear();  // and the folder's own weights differ from them by fp8's rounding
  auto folder_weights = text::encoder_weights(model, model.t5_part());
  const auto folder = text::T5Encoder::load(folder_weights, *model.text_encoder, at::kFloat, at::kCPU)->forward(ids);
  EXPECT_GT(test::max_abs_diff(fp8, folder), 1e-5);
}

TEST(TextEncoderFile, files_that_do_not_belong_are_named) {
  test::TempDir tmp;
  auto refused = [&](const test::Args& extra, const std::vector<std::string>& words, int code) {
    const auto r = test::run(test::bin("dit-launch"), wan_job(tmp.path("x.safetensors")) + extra, 60000);
    EXPECT_EQ(r.code, code) << r.err;
    for (const auto& w : words) EXPECT_TRUE(test::contains(r.err, w)) << "missing '" << w << "' in: " << r.err;
    EXPECT_FALSE(std::filesystem::exists(tmp.path("x.safetensors")));
  };
  write_umt5_gguf(tmp.path("llama.gguf"), "llama");
  refused({"--text_encoder", tmp.path("llama.gguf")}, {"llama.gguf", "architecture 'llama'", "'t5encoder' or 't5'"}, 3);
  write_umt5_gguf(tmp.path("fewer.gguf"), "t5encoder", "enc.blk.1.ffn_down.weight");
  refused({"--text_encoder", tmp.path("fewer.gguf")}, {"fewer.gguf", "encoder.block.1.layer.1.DenseReluDense.wo.weight"}, 3);
  refused({"--text_encoder_2", tmp.path("fewer.gguf")}, {"--text_encoder_2", "no text_encoder_2/"}, 2);
}

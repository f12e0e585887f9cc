// A transformer from one file (--transformer FILE). FLUX.1 against flux_gguf_tiny and flux_fp8_tiny: the Black
// Forest Labs layout read as diffusers' from_single_file reads it, GGUF Q8_0 / Q4_0 and fp8 (plain and scaled)
// kept quantized in memory, the whole job from words in one process and in parallel mixes. Wan in its own
// layout (as ComfyUI keeps it, prefix and all) equal to its folder. And the files that do not belong to the
// folder, refused, named with the tensor and what would work.
#include <cstring>
#include <filesystem>
#include <sstream>

#include "io/gguf/gguf_file.h"
#include "io/safetensors/safetensors_file.h"
#include "io/weights/tensor_file.h"
#include "io/weights/weights.h"
#include "mixes.h"
#include "plan/families/registry.h"
#include "plan/family.h"
#include "process.h"
#include "tensor_support.h"

using namespace studio;

namespace {

const std::string kModel = "flux_words_tiny";

struct Variant {
  const char* name;      // the golden's suffix
  const char* golden;    // its case
  const char* file;
};
const Variant kVariants[] = {{"q8_0", "flux_gguf_tiny", "transformer-Q8_0.gguf"},
                             {"q4_0", "flux_gguf_tiny", "transformer-Q4_0.gguf"},
                             {"fp8", "flux_fp8_tiny", "transformer-fp8_e4m3fn.safetensors"},
                             {"fp8_scaled", "flux_fp8_tiny", "transformer-fp8_e4m3fn_scaled.safetensors"}};

const Variant& variant(const std::string& name) {
  for (const auto& v : kVariants)
    if (name == v.name) return v;
  throw std::logic_error("no variant " + name);
}

std::string file_of(const Variant& v) { return test::golden_case(v.golden) + "/" + v.file; }

test::Args job_args(const std::string& save) {
  const auto g = test::golden_json("flux_gguf_tiny");
  return {"--model", test::golden_case(kModel), "--prompt", std::string(g["prompt"]), "--seed",
          std::to_string(int(g["seed"])), "--height", std::to_string(int(g["height"])), "--width",
          std::to_string(int(g["width"])), "--num_inference_steps", std::to_string(int(g["num_inference_steps"])),
          "--guidance_scale", std::to_string(double(g["guidance_scale"])), "--max_sequence_length",
          std::to_string(int(g["max_sequence_length"])), "--save_tensors", save};
}

}  // namespace

// "variant flags": the file and the parallel mix.
class FluxSingleFile : public ::testing::TestWithParam<const char*> {
 protected:
  test::TempDir tmp_;
};

TEST_P(FluxSingleFile, reproduces_from_single_file) {
  std::istringstream words(GetParam());
  std::string name;
  words >> name;
  const Variant& v = variant(name);
  const std::string out = tmp_.path("run.safetensors");
  auto args = job_args(out) + test::Args{"--transformer", file_of(v)};
  for (std::string w; words >> w;) args.push_back(w);
  const auto r = test::run(test::bin("dit-launch"), args, 180000);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(test::contains(r.err, "loading " + file_of(v))) << r.err;
  // The run's metadata names the file that ran in place of the folder's weights, with its size.
  const auto meta = io::SafetensorsFile::open(out)->metadata();
  EXPECT_EQ(meta.at("transformer"), file_of(v));
  EXPECT_EQ(meta.at("transformer_bytes"), std::to_string(std::filesystem::file_size(file_of(v))));
  io::TensorFile f(out, "run");
  const double latents = test::max_abs_diff(f.get("final_latents", 3, ""), test::golden_tensor(v.golden, std::string("final_latents_") + v.name));
  const double image = test::max_abs_diff(f.get("image", 4, ""), test::golden_tensor(v.golden, std::string("image_") + v.name));
  const double moved = test::max_abs_diff(f.get("final_latents", 3, ""), test::golden_tensor(v.golden, "final_latents_unquantized"));
  std::printf("%s: final_latents %.3g, image %.3g (%.3g from the unquantized run)\n", GetParam(), latents, image, moved);
  EXPECT_LT(latents, 1e-3);
  EXPECT_LT(image, 1e-3);
  EXPECT_GT(moved, 1e-3) << "the quantized weights were used, not the folder's";
}

INSTANTIATE_TEST_SUITE_P(Files, FluxSingleFile,
                         ::testing::Values("q8_0", "q4_0", "fp8", "fp8_scaled", "q8_0 --ulysses_degree 2 --ring_degree 2",
                                           "q4_0 --pipefusion_parallel_degree 2 --warmup_steps 4",
                                           "fp8_scaled --ulysses_degree 2 --use_parallel_vae",
                                           "q8_0 --ulysses_degree 2 --shard_weights", "q4_0 --offload blocks"),
                         test::flags_name);

// The weights stay as the file stores them: a GGUF Q8_0 layer holds 34 bytes per 32 weights, and the rows of
// BFL's fused qkv that are diffusers' to_k are the file's own bytes.
TEST(FluxSingleFileMemory, quantized_layers_stay_packed) {
  const auto folder = plan::read_model_folder(test::golden_case(kModel));
  const std::string file = file_of(variant("q8_0"));
  auto w = io::WeightSet::open_file(file, {"flux"}, [&](const std::set<std::string>& names) {
    return plan::rules_of(folder).transformer_renames(folder, names);
  });
  const auto k = w.take_linear("transformer_blocks.0.attn.to_k.weight", {32, 32}, at::kFloat, at::kCPU);
  ASSERT_TRUE(k.packed.defined());
  EXPECT_FALSE(k.dense.defined());
  EXPECT_EQ(k.packed.format, plan::WeightFormat::Q8_0);
  EXPECT_EQ(k.packed.nbytes(), 32u * 34u);
  const auto gguf = io::GgufFile::open(file);
  const auto* qkv = gguf->find("double_blocks.0.img_attn.qkv.weight");
  EXPECT_EQ(std::memcmp(k.packed.bytes.contiguous().data_ptr<uint8_t>(), gguf->data(*qkv) + 32 * 34, 32 * 34), 0);
  // F32 tensors of the file (img_attn.proj: 1024 weights) are ordinary dense weights.
  EXPECT_TRUE(w.take_linear("transformer_blocks.0.attn.to_out.0.weight", {32, 32}, at::kFloat, at::kCPU).dense.defined());
}

// --quantize fp8 keeps the folder's float linear weights in fp8: the run moves a little (about what the fp8
// goldens move, 0.1) and not at all where it must not (it is not the unquantized run).
TEST(FluxQuantizeFp8, stores_float_weights_in_fp8) {
  test::TempDir tmp;
  const std::string out = tmp.path("run.safetensors");
  const auto r = test::run(test::bin("dit-launch"), job_args(out) + test::Args{"--quantize", "fp8"}, 180000);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(test::contains(r.err, "linear weights kept in fp8")) << r.err;
  EXPECT_EQ(io::SafetensorsFile::open(out)->metadata().at("quantize"), "fp8");
  const double moved = test::max_abs_diff(io::TensorFile(out, "run").get("final_latents", 3, ""),
                                          test::golden_tensor("flux_gguf_tiny", "final_latents_unquantized"));
  std::printf("--quantize fp8: %.3g from the unquantized run\n", moved);
  EXPECT_GT(moved, 1e-3);
  EXPECT_LT(moved, 0.3);
}

TEST(FluxSingleFileRefusals, files_that_do_not_belong_are_named) {
  test::TempDir tmp;
  // Exit 3: bad input (the file); 2: a bad flag, caught with the rest of the job's checks.
  auto refused = [&](const test::Args& extra, const std::vector<std::string>& words, int code = 3) {
    const auto r = test::run(test::bin("dit-launch"), job_args(tmp.path("x.safetensors")) + extra, 60000);
    EXPECT_EQ(r.code, code) << r.err;
    EXPECT_FALSE(test::contains(r.err, "encoding with")) << r.err;  // refused before the prompt is encoded
    for (const auto& w : words) EXPECT_TRUE(test::contains(r.err, w)) << "missing '" << w << "' in: " << r.err;
    EXPECT_FALSE(std::filesystem::exists(tmp.path("x.safetensors")));
  };
  // Another architecture's GGUF.
  const auto src = io::GgufFile::open(file_of(variant("q8_0")));
  std::vector<io::GgufTensorToWrite> tensors;
  for (const auto& t : src->tensors()) tensors.push_back({t.name, t.format, t.shape, src->data(t)});
  io::write_gguf(tmp.path("sd3.gguf"), tensors, {{"general.architecture", "sd3"}});
  refused({"--transformer", tmp.path("sd3.gguf")},
          {"--transformer " + tmp.path("sd3.gguf"), "architecture 'sd3'", "flux"});
  // Another family's transformer in the diffusers layout: named as the flag's file that is not this folder's part.
  const std::string wan = test::golden_case("wan21_tiny") + "/transformer/diffusion_pytorch_model.safetensors";
  refused({"--transformer", wan}, {"--transformer " + wan + ": has no weight for", "transformer/config.json asks for",
                                   "another model's transformer", "give the file made for this folder's transformer/"});
  // A tensor missing.
  std::vector<io::GgufTensorToWrite> fewer;
  for (const auto& t : tensors)
    if (t.name != "single_blocks.1.linear2.weight") fewer.push_back(t);
  io::write_gguf(tmp.path("fewer.gguf"), fewer, {{"general.architecture", "flux"}});
  refused({"--transformer", tmp.path("fewer.gguf")}, {"fewer.gguf", "missing tensor 'single_blocks.1.linear2.weight'",
                                                      "single_transformer_blocks.1.proj_out.weight"});
  // Shapes another config's: the folder says 2 single blocks; a file of a wider model does not fit.
  std::vector<io::GgufTensorToWrite> wider = tensors;
  for (auto& t : wider)
    if (t.name == "img_in.weight") t.shape = {16, 64};
  io::write_gguf(tmp.path("wider.gguf"), wider, {{"general.architecture", "flux"}});
  refused({"--transformer", tmp.path("wider.gguf")}, {"wider.gguf", "img_in.weight", "[16, 64]", "[32, 64]"});
  // Not a weights file; a second expert for a one-transformer model; a format not offered.
  test::write_file(tmp.path("notes.txt"), "hello, this is not a model");
  refused({"--transformer", tmp.path("notes.txt")}, {"--transformer", "notes.txt", "neither a GGUF"}, 2);
  refused({"--transformer", tmp.path("")}, {"--transformer", "is a folder, not a file"}, 2);
  refused({"--text_encoder_2", tmp.path("absent.gguf")}, {"--text_encoder_2", "absent.gguf: no such file"}, 2);
  refused({"--transformer_2", file_of(variant("q8_0"))}, {"--transformer_2", "one transformer"}, 2);
  refused({"--quantize", "int4"}, {"--quantize int4", "fp8"}, 2);
  refused({"--transformer", file_of(variant("q8_0")), "--quantize", "fp8"}, {"--quantize fp8", "quantized already"}, 2);
  // A LoRA given as the transformer: named as one, with the flag that takes it.
  const std::string lora = test::golden_case("flux_lora_tiny") + "/lora_peft.safetensors";
  refused({"--transformer", lora}, {"--transformer " + lora + ": this file is a LoRA", "give it with --lora"}, 2);
}

// wan21_tiny's and wan21_i2v_tiny's transformers renamed to Wan's own module names (the Wan team's model.py:
// self_attn.q, cross_attn.o, ffn.0, norm3 before the cross-attention, modulation, head.head, time_embedding.0,
// and for image-to-video img_emb.proj.N, cross_attn.k_img, ...) under a whole ComfyUI checkpoint's prefix: the
// same weights, so the run equals the folder's reference.
class WanSingleFile : public ::testing::TestWithParam<std::string> {};

TEST_P(WanSingleFile, the_original_layout_runs_as_the_folder) {
  test::TempDir tmp;
  const std::string c = GetParam();
  const auto folder = io::SafetensorsFile::open(test::golden_case(c) + "/transformer/diffusion_pytorch_model.safetensors");
  const std::vector<std::pair<std::string, std::string>> block = {
      {"attn1.to_q", "self_attn.q"}, {"attn1.to_k", "self_attn.k"}, {"attn1.to_v", "self_attn.v"},
      {"attn1.to_out.0", "self_attn.o"}, {"attn1.norm_q", "self_attn.norm_q"}, {"attn1.norm_k", "self_attn.norm_k"},
      {"attn2.to_q", "cross_attn.q"}, {"attn2.to_k", "cross_attn.k"}, {"attn2.to_v", "cross_attn.v"},
      {"attn2.to_out.0", "cross_attn.o"}, {"attn2.norm_q", "cross_attn.norm_q"}, {"attn2.norm_k", "cross_attn.norm_k"},
      {"ffn.net.0.proj", "ffn.0"}, {"ffn.net.2", "ffn.2"}, {"norm2", "norm3"}, {"scale_shift_table", "modulation"},
      {"attn2.add_k_proj", "cross_attn.k_img"}, {"attn2.add_v_proj", "cross_attn.v_img"},
      {"attn2.norm_added_k", "cross_attn.norm_k_img"}};
  const std::vector<std::pair<std::string, std::string>> top = {
      {"condition_embedder.time_embedder.linear_1", "time_embedding.0"},
      {"condition_embedder.time_embedder.linear_2", "time_embedding.2"},
      {"condition_embedder.text_embedder.linear_1", "text_embedding.0"},
      {"condition_embedder.text_embedder.linear_2", "text_embedding.2"},
      {"condition_embedder.time_proj", "time_projection.1"}, {"proj_out", "head.head"},
      {"scale_shift_table", "head.modulation"}, {"patch_embedding", "patch_embedding"},
      {"condition_embedder.image_embedder.norm1", "img_emb.proj.0"},
      {"condition_embedder.image_embedder.ff.net.0.proj", "img_emb.proj.1"},
      {"condition_embedder.image_embedder.ff.net.2", "img_emb.proj.3"},
      {"condition_embedder.image_embedder.norm2", "img_emb.proj.4"}};
  auto original = [&](const std::string& name) {
    std::string rest = name;
    std::string prefix;
    if (name.rfind("blocks.", 0) == 0) {
      const auto dot = name.find('.', 7);
      prefix = name.substr(0, dot + 1), rest = name.substr(dot + 1);
    }
    for (const auto& [ours, theirs] : prefix.empty() ? top : block)
      if (rest == ours || rest.rfind(ours + ".", 0) == 0) return prefix + theirs + rest.substr(ours.size());
    ADD_FAILURE() << "no original name for " << name;
    return name;
  };
  std::vector<io::TensorToWrite> rows;
  for (const auto& t : folder->tensors())
    rows.push_back({"model.diffusion_model." + original(t.name), t.dtype, t.shape, folder->data(t)});
  const std::string file = tmp.path(c + "_fp32.safetensors");
  io::write_safetensors(file, rows);

  const auto g = test::golden_json(c);
  const std::string out = tmp.path("run.safetensors");
  test::Args picture;
  if (g.contains("image")) picture = {"--image", test::golden_case(c) + "/" + std::string(g["image"])};
  const auto r = test::run(test::bin("dit-launch"),
                           picture + test::Args{"--model", test::golden_case(c), "--transformer", file, "--prompt", std::string(g["prompt"]),
                            "--negative_prompt", std::string(g["negative_prompt"]), "--seed", std::to_string(int(g["seed"])),
                            "--height", std::to_string(int(g["height"])), "--width", std::to_string(int(g["width"])),
                            "--num_frames", std::to_string(int(g["num_frames"])), "--num_inference_steps",
                            std::to_string(int(g["num_inference_steps"])), "--guidance_scale",
                            std::to_string(double(g["guidance_scale"])), "--max_sequence_length",
                            std::to_string(int(g["max_sequence_length"])), "--save_tensors", out},
                           180000);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_LT(test::max_abs_diff(io::TensorFile(out, "run").get("final_latents", 5, ""), test::golden_tensor(c, "final_latents")),
            test::kRunTolerance);
}

INSTANTIATE_TEST_SUITE_P(Cases, WanSingleFile, ::testing::Values("wan21_tiny", "wan21_i2v_tiny"),
                         [](const auto& info) { return info.param; });

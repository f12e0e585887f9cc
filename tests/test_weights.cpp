// Loading transformer/ weights: a checkpoint that does not fit its config is refused with the file and
// tensor named; a sharded checkpoint (index + shards, F32 or BF16) loads through the same loader.
#include <filesystem>

#include <ATen/ops/isfinite.h>

#include "plan/families/cogvideox_config.h"
#include "io/weights/weights.h"
#include "models/cogvideox/cogvideox_transformer.h"
#include "plan/error.h"
#include "tensor_support.h"

using namespace studio;
using nlohmann::json;

namespace {

class Weights : public ::testing::Test {
 protected:
  test::TempDir tmp_;
  int n_ = 0;
  std::string copy_case(const std::string& name = "cogvx2b_tiny") {
    const std::string dir = tmp_.path("c" + std::to_string(n_++));
    test::copy_tree(test::golden_case(name), dir);
    return dir;
  }
  static std::shared_ptr<models::CogVideoXTransformer> load(const std::string& dir) {
    auto m = plan::read_model_folder(dir);
    return models::CogVideoXTransformer::load(dir + "/transformer", m.parts_as<plan::CogVideoXParts>().transformer, at::kFloat, at::kCPU);
  }
  // Rewrites transformer/ as `shards` files in `dtype` plus the index real checkpoints carry.
  static void shard(const std::string& dir, int shards, io::DType dtype) {
    const std::string t = dir + "/transformer/";
    auto src = io::SafetensorsFile::open(t + "diffusion_pytorch_model.safetensors");
    json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", json::object()}};
    std::vector<std::vector<std::pair<std::string, at::Tensor>>> parts{size_t(shards)};
    size_t i = 0;
    for (const auto& info : src->tensors()) {
      auto w = io::to_tensor(src, info, at::kFloat, at::kCPU);
      if (dtype == io::DType::BF16) w = w.to(at::kBFloat16);
      parts[i++ % size_t(shards)].emplace_back(info.name, w.contiguous());
    }
    for (int s = 0; s < shards; ++s) {
      char name[64];
      std::snprintf(name, sizeof name, "diffusion_pytorch_model-%05d-of-%05d.safetensors", s + 1, shards);
      std::vector<io::TensorToWrite> out;
      for (auto& [n, w] : parts[size_t(s)]) {
        out.push_back({n, dtype, w.sizes().vec(), w.data_ptr()});
        index["weight_map"][n] = name;
      }
      io::write_safetensors(t + name, out);
    }
    src.reset();
    std::filesystem::remove(t + "diffusion_pytorch_model.safetensors");
    test::write_file(t + "diffusion_pytorch_model.safetensors.index.json", index.dump(2));
  }
  static at::Tensor step0(const models::CogVideoXTransformer& m, const std::string& name) {
    auto h = test::golden_tensor(name, "step0_hidden_states");
    io::TensorFile f(test::golden_case(name) + "/golden.safetensors", "golden");
    return m.forward({h, test::golden_tensor(name, "step0_encoder_hidden_states"), f.get_int64("step0_timestep")},
                     m.positions(m.token_grid(h)));
  }
};

TEST_F(Weights, shape_that_does_not_fit_the_config) {
  const std::string dir = copy_case();
  test::edit_json(dir + "/transformer/config.json", [](json& j) {
    j["num_attention_heads"] = 8;  // same width, other head size
    j["attention_head_dim"] = 8;
  });
  EXPECT_TRUE(test::throws_with<InputError>([&] { load(dir); },
                                            {"diffusion_pytorch_model.safetensors",
                                             "'transformer_blocks.0.attn1.norm_q.weight'", "shape [16]",
                                             "config needs [8]"}));
}

TEST_F(Weights, missing_weight) {
  const std::string dir = copy_case();
  test::edit_json(dir + "/transformer/config.json", [](json& j) { j["num_layers"] = 3; });
  EXPECT_TRUE(test::throws_with<InputError>([&] { load(dir); },
                                            {"transformer", "missing weight 'transformer_blocks.2.", "config.json"}));
}

TEST_F(Weights, unexpected_weight) {
  const std::string dir = copy_case();
  test::edit_json(dir + "/transformer/config.json", [](json& j) { j["num_layers"] = 1; });
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] { load(dir); }, {"diffusion_pytorch_model.safetensors", "unexpected weight 'transformer_blocks.1."}));
}

TEST_F(Weights, no_weights_file) {
  const std::string dir = copy_case();
  std::filesystem::remove(dir + "/transformer/diffusion_pytorch_model.safetensors");
  test::write_file(dir + "/transformer/diffusion_pytorch_model.bin", "pickle");
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] { load(dir); },
      {"no diffusion_pytorch_model.safetensors", ".index.json", ".bin pickle checkpoint is never read"}));
}

TEST_F(Weights, truncated_weights_file) {
  const std::string dir = copy_case();
  const std::string f = dir + "/transformer/diffusion_pytorch_model.safetensors";
  std::filesystem::resize_file(f, std::filesystem::file_size(f) / 2);
  EXPECT_TRUE(test::throws_with<InputError>([&] { load(dir); }, {"diffusion_pytorch_model.safetensors", "truncated: the file holds"}));
}

TEST_F(Weights, sharded_float32_reproduces_the_reference) {
  const std::string dir = copy_case();
  shard(dir, 3, io::DType::F32);
  EXPECT_FALSE(std::filesystem::exists(dir + "/transformer/diffusion_pytorch_model.safetensors"));
  auto m = load(dir);
  const double err = test::max_abs_diff(step0(*m, "cogvx2b_tiny"), test::golden_tensor("cogvx2b_tiny", "step0_output"));
  EXPECT_LT(err, test::kCallTolerance);
}

TEST_F(Weights, sharded_bfloat16_converts_on_load) {
  const std::string dir = copy_case("cogvx5b_tiny");
  shard(dir, 2, io::DType::BF16);
  auto w = io::WeightSet::open(dir + "/transformer", "diffusion_pytorch_model");
  auto ref = io::WeightSet::open(test::golden_case("cogvx5b_tiny") + "/transformer", "diffusion_pytorch_model");
  const std::string name = "transformer_blocks.1.attn1.to_q.weight";
  auto got = w.take(name, {64, 64}, at::kFloat, at::kCPU);
  auto want = ref.take(name, {64, 64}, at::kFloat, at::kCPU).to(at::kBFloat16).to(at::kFloat);
  EXPECT_EQ(test::max_abs_diff(got, want), 0.0);  // the same conversions of the same values: exact
  // The whole model runs from bf16 weights; its output stays near the float32 reference.
  auto m = load(dir);
  auto out = step0(*m, "cogvx5b_tiny");
  EXPECT_TRUE(at::isfinite(out).all().item<bool>());
  const double err = test::max_abs_diff(out, test::golden_tensor("cogvx5b_tiny", "step0_output"));
  std::printf("bf16 weights: step0_output max error %.3g\n", err);
  EXPECT_LT(err, 0.1);
}

TEST_F(Weights, index_naming_a_tensor_its_shard_lacks) {
  const std::string dir = copy_case();
  shard(dir, 2, io::DType::F32);
  const std::string idx = dir + "/transformer/diffusion_pytorch_model.safetensors.index.json";
  test::edit_json(idx, [](json& j) {
    j["weight_map"]["proj_out.weight"] = "diffusion_pytorch_model-00001-of-00002.safetensors";
  });
  const bool in_first = io::SafetensorsFile::open(dir + "/transformer/diffusion_pytorch_model-00001-of-00002.safetensors")
                            ->find("proj_out.weight");
  if (in_first)
    test::edit_json(idx, [](json& j) {
      j["weight_map"]["proj_out.weight"] = "diffusion_pytorch_model-00002-of-00002.safetensors";
    });
  EXPECT_TRUE(test::throws_with<InputError>([&] { load(dir); }, {"index.json", "'proj_out.weight'", "has no such tensor"}));
}

TEST_F(Weights, index_cannot_point_outside_the_folder) {
  const std::string dir = copy_case();
  shard(dir, 2, io::DType::F32);
  test::edit_json(dir + "/transformer/diffusion_pytorch_model.safetensors.index.json",
                  [](json& j) { j["weight_map"]["proj_out.weight"] = "../../etc/passwd"; });
  EXPECT_TRUE(test::throws_with<InputError>([&] { load(dir); }, {"'../../etc/passwd'", "plain file names"}));
}

}  // namespace

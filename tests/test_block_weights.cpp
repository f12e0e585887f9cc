// The blocks' weights kept elsewhere between calls and whole while a block runs: --shard_weights (each CFG x
// ring x Ulysses rank keeps 1/N of every block, gathered before it runs) and --offload blocks (host memory, copied in).
// A call equals the unsharded one bit for bit, a rank keeps its share and no whole block between calls (the
// block that runs and the next are gathered into two buffers kept from block to block), and
// whole runs meet the reference cases (CogVideoX-5B, Wan2.1 and FLUX.1 shapes) in the mixes that shard.
#include <set>
#include <sstream>

#include "io/weights/tensor_file.h"
#include "mixes.h"
#include "models/family_runtime.h"
#include "models/offloaded_blocks.h"
#include "parallel/parallel_model.h"
#include "parallel/sharded_blocks.h"
#include "process.h"
#include "rank_threads.h"
#include "tensor_support.h"

using namespace studio;

namespace {

struct Step {
  models::StepInputs in;
  at::Tensor want;
};

Step step0(const std::string& c) {
  const auto t = io::TensorFile(test::golden_case(c) + "/golden.safetensors", "g").get_int64("step0_timestep");
  return {{test::golden_tensor(c, "step0_hidden_states"), test::golden_tensor(c, "step0_encoder_hidden_states"), t},
          test::golden_tensor(c, "step0_output")};
}

int64_t block_bytes(const models::DitModel& m) {
  int64_t sum = 0;
  for (size_t i = 0; i < m.num_blocks(); ++i)
    for (const auto& t : m.block_tensors(i)) sum += int64_t(t.numel() * t.element_size());
  return sum;
}

int64_t held_block_values(const models::DitModel& m) {
  int64_t sum = 0;
  for (size_t i = 0; i < m.num_blocks(); ++i)
    for (const auto& t : m.block_tensors(i)) sum += t.numel();
  return sum;
}

}  // namespace

// ulysses x ring x CFG: (2, 1, 1), (1, 2, 1), (2, 2, 1), (1, 1, 2), (2, 1, 2)
class ShardedCall : public ::testing::TestWithParam<int> {};

TEST_P(ShardedCall, equals_the_unsharded_call_and_keeps_a_share) {
  const std::string c = "cogvx5b_tiny";
  plan::ParallelConfig p;
  const int mix = GetParam();
  p.ulysses_degree = mix == 1 || mix == 3 ? 1 : 2;
  p.ring_degree = mix == 1 || mix == 2 ? 2 : 1;
  p.use_cfg_parallel = mix >= 3;
  p.shard_weights = true;  // the mesh then makes the group that shards (CFG x ring x Ulysses)
  const auto folder = plan::read_model_folder(test::golden_case(c));
  const auto s = step0(c);
  std::vector<std::string> notes(size_t(p.world_size()));
  const auto failure = test::run_ranks(p, [&](int r, parallel::Mesh& mesh) {
    auto model = models::load_transformer(folder, at::kFloat, at::kCPU);  // each rank its own: sharding changes it
    const auto pos = model->positions(model->token_grid(s.in.latents));
    parallel::ParallelTransformer call(*model, mesh);
    const auto whole = call(s.in, pos);
    const int64_t bytes = block_bytes(*model);
    // Gathering ahead, as on a GPU: the next block while one runs.
    auto shards = std::make_shared<parallel::ShardedBlocks>(mesh.group(plan::Dim::Replica), true);
    model->set_block_weights(shards);
    std::ostringstream note;
    if (held_block_values(*model) != 0) note << "whole blocks kept; ";
    const int n = p.replica_degree();
    if (int64_t(shards->shard_bytes()) < bytes / n || int64_t(shards->shard_bytes()) > bytes / n + 64 * 2 * 64)
      note << "keeps " << shards->shard_bytes() << " bytes of " << bytes << " over " << n << " ranks; ";
    const auto sharded = call(s.in, pos);
    if (!at::equal(sharded, whole)) note << "differs by " << test::max_abs_diff(sharded, whole) << "; ";
    if (test::max_abs_diff(sharded, s.want) > test::kCallTolerance) note << "far from the reference; ";
    if (held_block_values(*model) != 0) note << "a block kept whole after the call; ";
    // The blocks run from two buffers, in turn (the one that runs, the next gathered meanwhile; the first tensor
    // at its start): no fresh memory per block. Views keep each buffer alive, so that a fresh one could not land
    // where the last one was.
    std::set<const void*> places;
    std::vector<at::Tensor> views;
    for (size_t i = 0; i < model->num_blocks(); ++i) {
      shards->before(i);
      views.push_back(model->block_tensors(i).front().view({-1}));
      places.insert(views.back().data_ptr());
      shards->after(i);
    }
    if (places.size() != 2) note << "blocks gathered into " << places.size() << " buffers; ";
    // Given at the start of the load, the shards take each block as it loads: the same shares, the same call;
    // and gathered as each block runs (as on the CPU), one buffer.
    auto at_load = std::make_shared<parallel::ShardedBlocks>(mesh.group(plan::Dim::Replica), false);
    auto loaded_sharded = models::load_transformer(folder, at::kFloat, at::kCPU, {}, 0, at_load);
    if (held_block_values(*loaded_sharded) != 0) note << "whole blocks kept when sharded at load; ";
    if (at_load->shard_bytes() != shards->shard_bytes()) note << "sharded at load keeps " << at_load->shard_bytes() << " bytes; ";
    if (!at::equal(parallel::ParallelTransformer(*loaded_sharded, mesh)(s.in, pos), whole))
      note << "sharded at load differs; ";
    places.clear();
    views.clear();
    for (size_t i = 0; i < loaded_sharded->num_blocks(); ++i) {
      at_load->before(i);
      views.push_back(loaded_sharded->block_tensors(i).front().view({-1}));
      places.insert(views.back().data_ptr());
      at_load->after(i);
    }
    if (places.size() != 1) note << "gathered as they run, blocks in " << places.size() << " buffers; ";
    notes[size_t(r)] = note.str();
  });
  for (int r = 0; r < p.world_size(); ++r) {
    EXPECT_TRUE(failure[size_t(r)].empty()) << "rank " << r << ": " << failure[size_t(r)];
    EXPECT_TRUE(notes[size_t(r)].empty()) << "rank " << r << ": " << notes[size_t(r)];
  }
}

INSTANTIATE_TEST_SUITE_P(Mixes, ShardedCall, ::testing::Values(0, 1, 2, 3, 4));

// (Wan's and the others' whole runs offloaded are below.)
TEST(OffloadedBlocks, a_call_equals_the_resident_one) {
  for (const std::string c : {"cogvx5b_tiny", "cogvx15_tiny"})
    for (bool ahead : {false, true}) {  // copied in as each block runs, or the next while one runs
      auto model = models::load_transformer(plan::read_model_folder(test::golden_case(c)), at::kFloat, at::kCPU);
      const auto s = step0(c);
      const auto pos = model->positions(model->token_grid(s.in.latents));
      const auto resident = model->forward(s.in, pos);
      model->set_block_weights(std::make_shared<models::OffloadedBlocks>(model->device(), ahead));
      EXPECT_EQ(held_block_values(*model), 0) << c;
      EXPECT_TRUE(at::equal(model->forward(s.in, pos), resident)) << c << " ahead " << ahead;
      EXPECT_EQ(held_block_values(*model), 0) << c;
    }
}

// Whole runs from words (Wan2.1) and from embeddings (CogVideoX-5B), sharded in the mixes that shard.
class ShardedRun : public ::testing::TestWithParam<const char*> {
 protected:
  test::TempDir tmp_;
};

TEST_P(ShardedRun, meets_the_reference) {
  std::istringstream words(GetParam());
  std::string c;
  words >> c;
  const auto g = test::golden_json(c);
  const std::string file = test::golden_case(c) + "/golden.safetensors", out = tmp_.path("run.safetensors");
  test::Args args{"--model", test::golden_case(c), "--height", std::to_string(int(g["height"])), "--width",
                  std::to_string(int(g["width"])), "--num_frames", std::to_string(int(g["num_frames"])),
                  "--num_inference_steps", std::to_string(int(g["num_inference_steps"])), "--guidance_scale",
                  std::to_string(double(g["guidance_scale"])), "--save_tensors", out};
  if (g.contains("guidance_scale_2"))
    args = args + test::Args{"--guidance_scale_2", std::to_string(double(g["guidance_scale_2"]))};
  if (g.contains("prompt")) {
    args = args + test::Args{"--prompt", g["prompt"], "--negative_prompt", g["negative_prompt"], "--seed",
                             std::to_string(int(g["seed"])), "--max_sequence_length",
                             std::to_string(int(g["max_sequence_length"]))};
  } else {
    args = args + test::Args{"--prompt_embeds", file, "--latents", file};
    if (g["use_dynamic_cfg"]) args.push_back("--use_dynamic_cfg");
    if (g["scheduler"] == "CogVideoXDPMScheduler") args = args + test::Args{"--sampler_noise", file};
  }
  for (std::string w; words >> w;) args.push_back(w);
  const auto r = test::run(test::bin("dit-launch"), args, 240000);
  ASSERT_EQ(r.code, 0) << r.err;
  // The first video (data parallel makes more, the first from the reference's seed).
  const double e = test::max_abs_diff(io::TensorFile(out, "t").get("final_latents", 5, "").narrow(0, 0, 1),
                                      test::golden_tensor(c, "final_latents"));
  std::printf("%s: final_latents %.3g\n", GetParam(), e);
  EXPECT_LT(e, test::kRunTolerance);
}

INSTANTIATE_TEST_SUITE_P(Mixes, ShardedRun,
                         ::testing::Values("cogvx5b_tiny --ulysses_degree 2 --shard_weights",
                                           "cogvx5b_tiny --ring_degree 2 --shard_weights",
                                           "cogvx5b_tiny --use_cfg_parallel --ulysses_degree 2 --shard_weights",
                                           "cogvx5b_tiny --use_cfg_parallel --shard_weights",
                                           "cogvx5b_tiny --ulysses_degree 2 --ring_degree 2 --shard_weights",
                                           "cogvx5b_tiny --offload blocks",
                                           "wan21_tiny --ulysses_degree 2 --shard_weights",
                                           "wan21_tiny --ring_degree 2 --shard_weights",
                                           "wan21_tiny --use_cfg_parallel --ulysses_degree 2 --shard_weights",
                                           "wan21_tiny --use_cfg_parallel --ring_degree 2 --shard_weights",
                                           "wan21_tiny --use_cfg_parallel --shard_weights",
                                           "wan21_tiny --ulysses_degree 2 --ring_degree 2 --shard_weights",
                                           "wan21_tiny --pipefusion_parallel_degree 2 --ulysses_degree 2 "
                                           "--warmup_steps 4 --shard_weights",
                                           "wan21_tiny --offload blocks --text_encoder_device cpu",
                                           "wan22_tiny --ulysses_degree 2 --shard_weights",
                                           "wan22_tiny --offload blocks",
                                           "hunyuan15_tiny --ulysses_degree 2 --shard_weights",
                                           "hunyuan15_tiny --offload blocks",
                                           "cogvx15_tiny --ring_degree 2 --shard_weights",
                                           "wan21_tiny --data_parallel_degree 2 --num_videos_per_prompt 2 "
                                           "--use_cfg_parallel --shard_weights"),
                         test::flags_name);

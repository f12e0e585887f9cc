// dit-launch and dit-models against the local stand-in for the Hub (tests/hub/fake_hub.h): a repo id run from the
// downloaded cache to the golden's numbers, dit-models' download, list, verify and remove (with its bad arguments),
// and one single file of a repository fetched with the folder it goes with.
#include <gtest/gtest.h>

#include <filesystem>

#include "hub/cache.h"
#include "hub/hub_fixture.h"
#include "process.h"

namespace fs = std::filesystem;
using namespace studio;
using test::Hub;
using test::kFluxRepo;
using test::max_abs_difference;

// The downloaded cache is what dit-launch --model ORG/NAME runs, and it reproduces the golden.
TEST_F(Hub, dit_launch_runs_a_repo_id_from_the_cache) {
  download(kFluxRepo);
  const auto g = test::golden_json("flux_words_tiny");
  const std::string out = tmp_.path("run.safetensors");
  const test::EnvVars env{{"HF_HUB_CACHE", settings_.cache_dir}};
  const auto r = test::run(test::bin("dit-launch"),
                           {"--model", kFluxRepo, "--prompt", g["prompt"], "--seed", std::to_string(int(g["seed"])),
                            "--height", std::to_string(int(g["height"])), "--width", std::to_string(int(g["width"])),
                            "--num_inference_steps", std::to_string(int(g["num_inference_steps"])),
                            "--guidance_scale", std::to_string(double(g["guidance_scale"])),
                            "--max_sequence_length", std::to_string(int(g["max_sequence_length"])), "--save_tensors", out},
                           180000, env);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto got = io::SafetensorsFile::open(out);
  const auto want = io::SafetensorsFile::open(test::golden_case("flux_words_tiny") + "/golden.safetensors");
  const auto* a = got->find("final_latents");
  const auto* b = want->find("final_latents");
  ASSERT_TRUE(a && b);
  ASSERT_EQ(a->shape, b->shape);
  ASSERT_TRUE(a->dtype == io::DType::F32 && b->dtype == io::DType::F32);
  const double worst = max_abs_difference(*got, *a, *want, *b);
  std::printf("dit-launch --model %s: final_latents max abs error %.3g\n", kFluxRepo, worst);
  EXPECT_LT(worst, 1e-3);

  const auto absent = test::run(test::bin("dit-launch"), {"--model", "test-org/absent", "--prompt", "a"}, 30000, env);
  EXPECT_EQ(absent.code, 2) << absent.err;
  EXPECT_TRUE(test::contains(absent.err, "--model test-org/absent: no such folder here")) << absent.err;
  EXPECT_TRUE(test::contains(absent.err, "`dit-models download test-org/absent`")) << absent.err;
}

// dit-models as a user runs it, configured by huggingface_hub's environment variables.
TEST_F(Hub, dit_models_downloads_lists_verifies_and_removes) {
  server_.add_repo("gated-org/cogvx", test::golden_case("cogvx2b_t5_tiny"), "hf_right");
  const test::EnvVars env{{"HF_ENDPOINT", server_.endpoint()}, {"HF_HUB_CACHE", settings_.cache_dir},
                          {"HF_HOME", tmp_.path("home")}, {"HF_TOKEN", ""}};
  auto models = [&](const test::Args& args, const test::EnvVars& extra = {}) {
    test::EnvVars all = env;
    all.insert(all.end(), extra.begin(), extra.end());
    return test::run(test::bin("dit-models"), args, 60000, all);
  };
  auto r = models({"download", kFluxRepo});
  ASSERT_EQ(r.code, 0) << r.err;
  // model_index.json first (it says which folders to fetch), then the other 23 with progress.
  EXPECT_TRUE(test::contains(r.err, "[23/23] ") && test::contains(r.err, "/s, ETA")) << r.err;
  EXPECT_TRUE(test::contains(r.err, "skipping 1 file the engine does not read (e.g. golden.safetensors)")) << r.err;
  EXPECT_TRUE(test::contains(r.err, "dit-launch --model " + std::string(kFluxRepo))) << r.err;
  r = models({"list"});
  EXPECT_EQ(r.code, 0);
  EXPECT_TRUE(test::contains(r.out, kFluxRepo) && test::contains(r.out, "FLUX.1") && test::contains(r.out, "complete, verified"))
      << r.out;
  EXPECT_EQ(models({"verify", kFluxRepo}).code, 0);
  // The models the engine runs, with what each takes: the image-to-video ones say they take a picture.
  r = models({"known"});
  EXPECT_EQ(r.code, 0) << r.err;
  for (const char* line : {"Wan-AI/Wan2.1-I2V-14B-480P-Diffusers", "THUDM/CogVideoX-5b-I2V", "words and a picture (--image)",
                           "black-forest-labs/FLUX.1-dev", "gated"})
    EXPECT_TRUE(test::contains(r.out, line)) << "missing '" << line << "' in:\n" << r.out;
  const auto line_of = [&](const std::string& repo) {
    const size_t at = r.out.find(repo);
    return at == std::string::npos ? std::string() : r.out.substr(at, r.out.find('\n', at) - at);
  };
  for (const char* repo : {"Wan-AI/Wan2.1-FLF2V-14B-720P-Diffusers", "Wan-AI/Wan2.2-I2V-A14B-Diffusers"})
    EXPECT_TRUE(test::contains(line_of(repo), "or a first and a last (--image, --last_image)")) << r.out;
  EXPECT_TRUE(test::contains(line_of("Wan-AI/Wan2.2-TI2V-5B-Diffusers"), "words, or words and a picture")) << r.out;
  EXPECT_TRUE(test::contains(line_of("THUDM/CogVideoX-5b-I2V"), "  words and a picture (--image)")) << r.out;

  // A flipped byte: verify names the file and exits 3.
  const std::string vae = hub::snapshot_dir(settings_.cache_dir, kFluxRepo) + "/vae/diffusion_pytorch_model.safetensors";
  const std::string blob = fs::canonical(vae).string();
  std::string bytes = test::read_file(blob);
  bytes[777] ^= 1;
  test::write_file(blob, bytes);
  r = models({"verify", kFluxRepo});
  EXPECT_EQ(r.code, 3);
  EXPECT_TRUE(test::contains(r.err, "does not match: vae/diffusion_pytorch_model.safetensors")) << r.err;

  // Gated: refused without a token (exit 3, saying what to do), then with the token file `login` writes.
  r = models({"download", "gated-org/cogvx"});
  EXPECT_EQ(r.code, 3);
  EXPECT_TRUE(test::contains(r.err, "HF_TOKEN") && test::contains(r.err, "huggingface-cli login")) << r.err;
  fs::create_directories(tmp_.path("home"));
  test::write_file(tmp_.path("home/token"), "hf_right\n");
  r = models({"download", "gated-org/cogvx", "--revision", "main"});
  EXPECT_EQ(r.code, 0) << r.err;

  // Mistakes name the flag or value and what would work.
  r = models({"download", "not-a-repo-id"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(test::contains(r.err, "'not-a-repo-id': not a Hub repository id; expected ORG/NAME")) << r.err;
  r = models({"download", kFluxRepo, "--revision"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(test::contains(r.err, "--revision needs a value")) << r.err;
  r = models({"download", kFluxRepo, "--file"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(test::contains(r.err, "--file needs a file of the repository")) << r.err;
  r = models({"verify", kFluxRepo, "--file", "model.safetensors"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(test::contains(r.err, "--file applies to download only")) << r.err;
  r = models({"fetch", kFluxRepo});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(test::contains(r.err, "unknown command 'fetch'")) << r.err;
  r = models({"donwload", kFluxRepo, "--revison", "main"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(test::contains(r.err, "unknown option '--revison'; did you mean --revision?")) << r.err;
  r = models({"donwload", kFluxRepo});
  EXPECT_TRUE(test::contains(r.err, "unknown command 'donwload'; did you mean download?")) << r.err;

  r = models({"remove", kFluxRepo});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(fs::exists(repo_path()));
  r = models({"remove", kFluxRepo});
  EXPECT_EQ(r.code, 3);
  EXPECT_TRUE(test::contains(r.err, "not in the cache")) << r.err;
}

// A cache put together by hand (plain files, no blobs named by their hash): verify cannot vouch for it and says
// so, and a file that `list` sees is damaged fails verify too.
TEST_F(Hub, dit_models_verify_says_what_it_could_not_check) {
  const std::string repo = hub::repo_dir(settings_.cache_dir, "test-org/by-hand"), commit(40, 'a');
  fs::create_directories(repo + "/refs");
  fs::create_directories(repo + "/snapshots");
  test::write_file(repo + "/refs/main", commit);
  const std::string snap = repo + "/snapshots/" + commit;
  fs::copy(test::golden_case("flux_words_tiny"), snap, fs::copy_options::recursive);
  fs::remove(snap + "/golden.safetensors");
  const test::EnvVars env{{"HF_HUB_CACHE", settings_.cache_dir}, {"HF_HOME", tmp_.path("home")}};
  auto r = test::run(test::bin("dit-models"), {"verify", "test-org/by-hand"}, 60000, env);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_TRUE(test::contains(r.err, "none of its") && test::contains(r.err, "could be checked")) << r.err;
  EXPECT_FALSE(test::contains(r.err, "match their hashes")) << r.err;
  const std::string vae = snap + "/vae/diffusion_pytorch_model.safetensors";
  test::write_file(vae, test::read_file(vae) + "8 bytes!");
  r = test::run(test::bin("dit-models"), {"verify", "test-org/by-hand"}, 60000, env);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_TRUE(test::contains(r.err, "vae/diffusion_pytorch_model.safetensors") &&
              test::contains(r.err, "download it again"))
      << r.err;
}

// A GGUF repository's one quant, with the folder it goes with from its own repository: only that file is
// fetched, a name the repository lacks is refused listing the ones it has, and dit-launch runs the two.
TEST_F(Hub, dit_models_downloads_one_single_file_for_transformer) {
  server_.add_repo("test-org/flux-gguf", test::golden_case("flux_gguf_tiny"));
  const test::EnvVars env{{"HF_ENDPOINT", server_.endpoint()}, {"HF_HUB_CACHE", settings_.cache_dir},
                          {"HF_HOME", tmp_.path("home")}, {"HF_TOKEN", ""}};
  auto r = test::run(test::bin("dit-models"), {"download", "test-org/flux-gguf", "transformer-Q4_0.gguf"}, 60000, env);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string snapshot = hub::snapshot_dir(settings_.cache_dir, "test-org/flux-gguf");
  EXPECT_TRUE(test::contains(r.err, "1 files (1 fetched")) << r.err;
  EXPECT_TRUE(test::contains(r.err, "--transformer " + snapshot + "/transformer-Q4_0.gguf")) << r.err;
  EXPECT_EQ(test::read_file(snapshot + "/transformer-Q4_0.gguf"),
            test::read_file(test::golden_case("flux_gguf_tiny") + "/transformer-Q4_0.gguf"));
  EXPECT_FALSE(fs::exists(snapshot + "/transformer-Q8_0.gguf"));
  EXPECT_FALSE(fs::exists(snapshot + "/golden.json"));

  // A LoRA from its repository, named with --file: only it is fetched, and the user is told how to apply it.
  server_.add_repo("test-org/flux-lora", test::golden_case("flux_lora_tiny"));
  r = test::run(test::bin("dit-models"), {"download", "test-org/flux-lora", "--file", "lora_kohya.safetensors"}, 60000,
                env);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string lora_repo = hub::snapshot_dir(settings_.cache_dir, "test-org/flux-lora");
  EXPECT_TRUE(test::contains(r.err, "--lora " + lora_repo + "/lora_kohya.safetensors:1")) << r.err;
  EXPECT_TRUE(fs::exists(lora_repo + "/lora_kohya.safetensors"));
  EXPECT_FALSE(fs::exists(lora_repo + "/lora_peft.safetensors"));
  // Listed by what each file is.
  r = test::run(test::bin("dit-models"), {"list"}, 60000, env);
  EXPECT_TRUE(test::contains(r.out, "LoRA for FLUX.1, width 32: lora_kohya.safetensors") &&
              test::contains(r.out, "single file: transformer-Q4_0.gguf"))
      << r.out;

  r = test::run(test::bin("dit-models"), {"download", "test-org/flux-gguf", "flux1-dev-Q4_K_S.gguf"}, 60000, env);
  EXPECT_EQ(r.code, 3);
  EXPECT_TRUE(test::contains(r.err, "has no file 'flux1-dev-Q4_K_S.gguf'") &&
              test::contains(r.err, "transformer-Q8_0.gguf"))
      << r.err;

  // The pipeline it goes with, in the same command (--base): all but the transformer's weights, which the file
  // stands for; its config is fetched, as --transformer reads it.
  r = test::run(test::bin("dit-models"),
                {"download", "test-org/flux-gguf", "transformer-Q4_0.gguf", "--base", kFluxRepo}, 60000, env);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string base = hub::snapshot_dir(settings_.cache_dir, kFluxRepo);
  EXPECT_TRUE(test::contains(r.err, "leaving out 1 file of weights in transformer/")) << r.err;
  EXPECT_TRUE(test::contains(r.err, "--model " + std::string(kFluxRepo) + " --transformer " + snapshot)) << r.err;
  EXPECT_TRUE(fs::exists(base + "/transformer/config.json"));
  EXPECT_TRUE(fs::exists(base + "/vae/diffusion_pytorch_model.safetensors"));
  EXPECT_FALSE(fs::exists(base + "/transformer/diffusion_pytorch_model.safetensors"));
  EXPECT_EQ(requests_for("transformer/diffusion_pytorch_model"), 0);
  r = test::run(test::bin("dit-models"), {"list"}, 60000, env);
  EXPECT_TRUE(test::contains(r.out, "no transformer/ weights: give dit-launch --transformer FILE")) << r.out;
  // Without the file, the run is refused before any encoding, with the flag that gives it.
  r = test::run(test::bin("dit-launch"), {"--model", kFluxRepo, "--prompt", "a boat", "--height", "64", "--width", "64",
                                          "--num_inference_steps", "1"}, 60000, env);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_TRUE(test::contains(r.err, "give them as one file with --transformer FILE")) << r.err;
  EXPECT_FALSE(test::contains(r.err, "encoding with")) << r.err;
  // A part no file stands for, one the pipeline lacks, and --base without a file, are named.
  r = test::run(test::bin("dit-models"), {"download", kFluxRepo, "--without", "vae"}, 60000, env);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(test::contains(r.err, "--without 'vae'") && test::contains(r.err, "transformer_2, text_encoder"))
      << r.err;
  r = test::run(test::bin("dit-models"), {"download", kFluxRepo, "--without", "transformer_2"}, 60000, env);
  EXPECT_EQ(r.code, 3);
  EXPECT_TRUE(test::contains(r.err, "has no component 'transformer_2'") && test::contains(r.err, "transformer, vae"))
      << r.err;
  r = test::run(test::bin("dit-models"), {"download", "test-org/flux-gguf", "--base", kFluxRepo}, 60000, env);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(test::contains(r.err, "--base " + std::string(kFluxRepo) + " goes with a single file")) << r.err;

  const auto g = test::golden_json("flux_gguf_tiny");
  r = test::run(test::bin("dit-launch"),
                {"--model", kFluxRepo, "--transformer", snapshot + "/transformer-Q4_0.gguf", "--prompt",
                 std::string(g["prompt"]), "--seed", std::to_string(int(g["seed"])), "--height", "64", "--width", "96",
                 "--num_inference_steps", "4", "--max_sequence_length", "16", "--save_tensors", tmp_.path("q4.safetensors")},
                120000, env);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(test::contains(r.err, "loading " + snapshot + "/transformer-Q4_0.gguf")) << r.err;
  // The reference's latents (float32 both), compared without LibTorch.
  const auto got = io::SafetensorsFile::open(tmp_.path("q4.safetensors"));
  const auto want = io::SafetensorsFile::open(test::golden_case("flux_gguf_tiny") + "/golden.safetensors");
  const auto *a = got->find("final_latents"), *b = want->find("final_latents_q4_0");
  ASSERT_TRUE(a && b && a->numel() == b->numel() && a->dtype == io::DType::F32 && b->dtype == io::DType::F32);
  const double worst = max_abs_difference(*got, *a, *want, *b);
  EXPECT_LT(worst, 1e-3);

  // A LoRA stands for no part: with --base, the pipeline comes whole (here its transformer's weights, left out
  // above, now fetched), and the hint names both.
  r = test::run(test::bin("dit-models"),
                {"download", "test-org/flux-lora", "lora_kohya.safetensors", "--base", kFluxRepo}, 60000, env);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(base + "/transformer/diffusion_pytorch_model.safetensors"));
  EXPECT_TRUE(test::contains(r.err, "--model " + std::string(kFluxRepo) + " --lora ")) << r.err;
}

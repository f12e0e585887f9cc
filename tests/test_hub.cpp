// engine/hub against a local server that answers as the Hugging Face Hub does (tests/hub/fake_hub.h),
// serving golden folders as repositories: a download compared file by file with its source, a dropped
// connection resumed with Range (within a run and by the next run), a corrupted file caught by its hash,
// a repo larger than any disk refused before anything is fetched, a gated repo, a cache written by hand
// in huggingface_hub's layout read back, and dit-launch --model ORG/NAME run from the downloaded cache.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <thread>

#include "hub/cache.h"
#include "hub/download.h"
#include "hub/fake_hub.h"
#include "hub/hashing.h"
#include "io/safetensors/safetensors_file.h"
#include "plan/error.h"
#include "process.h"
#include "support.h"

namespace fs = std::filesystem;
using namespace studio;

namespace {

const char* kFluxRepo = "test-org/flux-words-tiny";

// The largest difference between two float32 tensors of as many values, read without LibTorch.
double max_abs_difference(const io::SafetensorsFile& fa, const io::TensorInfo& a, const io::SafetensorsFile& fb,
                          const io::TensorInfo& b) {
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    float x, y;
    std::memcpy(&x, fa.data(a) + 4 * i, 4);
    std::memcpy(&y, fb.data(b) + 4 * i, 4);
    worst = std::max(worst, double(std::fabs(x - y)));
  }
  return worst;
}
const char* kTransformer = "transformer/diffusion_pytorch_model.safetensors";

class Hub : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.add_repo(kFluxRepo, test::golden_case("flux_words_tiny"));
    settings_.endpoint = server_.endpoint();
    settings_.cache_dir = tmp_.path("hub");
  }
  hub::DownloadResult download(const std::string& repo, hub::DownloadOptions o = {}) {
    hub::HubClient client(settings_);
    return hub::download_repo(client, repo, o);
  }
  int requests_for(const std::string& part, bool with_range = false) {
    int n = 0;
    for (const auto& r : server_.requests()) n += test::contains(r.target, part) && (!with_range || !r.range.empty());
    return n;
  }
  std::vector<std::string> ranges_for(const std::string& part) {
    std::vector<std::string> out;
    for (const auto& r : server_.requests())
      if (test::contains(r.target, part) && !r.range.empty()) out.push_back(r.range);
    return out;
  }
  std::string repo_path() const { return hub::repo_dir(settings_.cache_dir, kFluxRepo); }

  test::TempDir tmp_;
  test::FakeHub server_;
  hub::HubSettings settings_;
};

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

// The files of a golden folder a download brings: all but the golden's own tensors.
int files_wanted(const std::string& folder) {
  int n = 0;
  for (const auto& e : fs::recursive_directory_iterator(folder))
    n += e.is_regular_file() && e.path().filename() != "golden.safetensors";
  return n;
}

bool has_partial_files(const std::string& dir) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); ++it)
    if (it->path().extension() == ".incomplete") return true;
  return false;
}

}  // namespace

TEST(HubNames, digests_repo_ids_and_the_files_the_engine_reads) {
  EXPECT_EQ(hub::sha256_of("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hub::git_blob_sha1_of("hello\n"), "ce013625030ba8dba906f756967f9e9ca394464a");  // `git hash-object`
  EXPECT_TRUE(hub::is_repo_id("black-forest-labs/FLUX.1-dev"));
  EXPECT_TRUE(hub::is_repo_id("THUDM/CogVideoX-2b"));
  for (const char* no : {"/abs/path", "a/b/c", "./x", "x/..", "org/", "org/-x", "a b/c"}) EXPECT_FALSE(hub::is_repo_id(no)) << no;
  EXPECT_EQ(hub::repo_folder_name("THUDM/CogVideoX-2b"), "models--THUDM--CogVideoX-2b");
  for (const char* yes : {"transformer/diffusion_pytorch_model.safetensors", "model_index.json", "tokenizer/spiece.model",
                          "tokenizer/merges.txt", "text_encoder/model.safetensors.index.json"})
    EXPECT_TRUE(hub::engine_reads(yes)) << yes;
  for (const char* no : {"text_encoder/pytorch_model.bin", "flux.ckpt", "x.pt", "x.pth", "vae/diffusion_pytorch_model.fp16.safetensors",
                         "text_encoder/model.fp16-00001-of-00002.safetensors", "README.md", ".gitattributes", "x.onnx"})
    EXPECT_FALSE(hub::engine_reads(no)) << no;
}

TEST_F(Hub, downloads_what_the_engine_reads_into_the_hub_cache_layout) {
  std::vector<hub::Progress> seen;
  hub::DownloadOptions o;
  o.on_progress = [&](const hub::Progress& p) { seen.push_back(p); };
  const auto r = download(kFluxRepo, o);
  EXPECT_EQ(r.commit, server_.commit(kFluxRepo));
  EXPECT_EQ(hub::snapshot_dir(settings_.cache_dir, kFluxRepo), r.snapshot);
  EXPECT_EQ(test::read_file(repo_path() + "/refs/main"), r.commit);
  // Every file of the folder but the golden's own tensors (a top-level safetensors beside a pipeline).
  const std::string source = test::golden_case("flux_words_tiny");
  int compared = 0;
  for (const auto& e : fs::recursive_directory_iterator(source)) {
    if (!e.is_regular_file()) continue;
    const std::string rel = fs::relative(e.path(), source).string();
    const fs::path got = fs::path(r.snapshot) / rel;
    if (rel == "golden.safetensors") {
      EXPECT_FALSE(fs::exists(got));
      continue;
    }
    ASSERT_TRUE(fs::is_symlink(got)) << rel;
    const std::string target = fs::read_symlink(got).string();
    EXPECT_EQ(target.rfind("../../", 0), 0u) << target;  // relative, into ../../blobs
    EXPECT_TRUE(test::contains(target, "blobs/")) << target;
    EXPECT_EQ(test::read_file(got.string()), test::read_file(e.path().string())) << rel;
    ++compared;
  }
  EXPECT_EQ(r.files, compared);
  EXPECT_EQ(r.fetched, compared);
  EXPECT_EQ(r.skipped, std::vector<std::string>{"golden.safetensors"});
  // LFS blobs are named by their sha256, the others by git's blob id.
  EXPECT_TRUE(fs::exists(repo_path() + "/blobs/" + hub::sha256_of_file(source + "/" + kTransformer)));
  EXPECT_TRUE(fs::exists(repo_path() + "/blobs/" + hub::git_blob_sha1_of_file(source + "/model_index.json")));
  EXPECT_FALSE(has_partial_files(settings_.cache_dir));
  // The tree came in pages; progress reached the whole and knew a speed.
  EXPECT_GE(requests_for("cursor="), 2);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().bytes, seen.back().total);
  EXPECT_EQ(seen.back().files_done, seen.back().files_total);
  EXPECT_GT(seen.back().bytes_per_second, 0);
  std::printf("downloaded %d files, %llu bytes, in %zu progress reports\n", r.files,
              static_cast<unsigned long long>(r.bytes_fetched), seen.size());

  const auto listed = hub::list_cache(settings_.cache_dir);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].repo_id, kFluxRepo);
  EXPECT_EQ(listed[0].family, "FLUX.1");
  EXPECT_EQ(listed[0].commit, r.commit);
  EXPECT_TRUE(listed[0].complete) << (listed[0].problems.empty() ? "" : listed[0].problems.front());
  EXPECT_TRUE(listed[0].verified);
  EXPECT_EQ(listed[0].bytes_on_disk, r.bytes_fetched);

  // Again: nothing is fetched twice.
  server_.forget_requests();
  const auto again = download(kFluxRepo);
  EXPECT_EQ(again.fetched, 0);
  EXPECT_EQ(requests_for("/resolve/"), 0);
}

TEST_F(Hub, a_dropped_connection_is_resumed_with_range_in_the_run_and_by_the_next_run) {
  server_.drop_once_after(kTransformer, 100000);
  download(kFluxRepo);
  EXPECT_EQ(ranges_for("/cdn/" + std::string(kFluxRepo) + "/" + kTransformer), std::vector<std::string>{"bytes=100000-"});
  const std::string source = test::golden_case("flux_words_tiny") + "/" + kTransformer;
  EXPECT_EQ(test::read_file(hub::snapshot_dir(settings_.cache_dir, kFluxRepo) + "/" + kTransformer), test::read_file(source));

  // A run that gives up (no retries) leaves its .incomplete, nothing linked; the next run resumes it.
  const std::string vae = "vae/diffusion_pytorch_model.safetensors";
  fs::remove_all(repo_path());
  server_.forget_requests();
  server_.drop_once_after(vae, 50000);
  hub::DownloadOptions no_retry;
  no_retry.retries = 0;
  const std::string why = error_of([&] { download(kFluxRepo, no_retry); });
  EXPECT_TRUE(test::contains(why, "run the same download again to resume")) << why;
  EXPECT_TRUE(has_partial_files(settings_.cache_dir));
  EXPECT_TRUE(hub::snapshot_dir(settings_.cache_dir, kFluxRepo).empty());  // no ref before the whole is there
  const auto r = download(kFluxRepo);
  EXPECT_EQ(ranges_for("/cdn/" + std::string(kFluxRepo) + "/" + vae), std::vector<std::string>{"bytes=50000-"});
  EXPECT_EQ(test::read_file(r.snapshot + "/" + vae), test::read_file(test::golden_case("flux_words_tiny") + "/" + vae));
  EXPECT_FALSE(has_partial_files(settings_.cache_dir));
}

TEST_F(Hub, a_stalled_connection_still_tells_its_progress_and_can_be_cancelled) {
  // The hub sends 150,000 bytes of the transformer and then nothing: the progress must still reach them
  // (a throttled report would otherwise wait for bytes that never come), and a cancel must land while
  // nothing arrives, not a minute later when the connection is declared stalled.
  server_.hold(kTransformer, 150000);
  std::atomic<bool> cancel{false}, reached{false};
  hub::DownloadOptions o;
  o.cancel = &cancel;
  o.on_progress = [&](const hub::Progress& p) {
    if (p.file == kTransformer && p.file_bytes == 150000) reached = true;
  };
  std::string why;
  std::thread downloading([&] { why = error_of([&] { download(kFluxRepo, o); }); });
  const auto start = std::chrono::steady_clock::now();
  while (!reached && std::chrono::steady_clock::now() - start < std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(reached) << "no progress report of the 150,000 bytes that arrived";
  const auto asked = std::chrono::steady_clock::now();
  cancel = true;
  downloading.join();
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
  server_.release(kTransformer);
  EXPECT_TRUE(test::contains(why, "cancel")) << why;
  EXPECT_LT(waited, 20.0) << "the cancel waited for the stalled connection";  // libcurl asks about once a second
  EXPECT_TRUE(has_partial_files(settings_.cache_dir));  // kept, to be resumed
}

TEST_F(Hub, a_corrupted_file_is_caught_by_its_sha256_and_never_linked) {
  server_.corrupt(kTransformer);
  const std::string why = error_of([&] { download(kFluxRepo); });
  EXPECT_TRUE(test::contains(why, kTransformer) && test::contains(why, "hashes to") && test::contains(why, "sha256"))
      << why;
  const std::string sha = hub::sha256_of_file(test::golden_case("flux_words_tiny") + "/" + kTransformer);
  EXPECT_FALSE(fs::exists(repo_path() + "/blobs/" + sha));
  EXPECT_FALSE(has_partial_files(settings_.cache_dir));
  for (const auto& snap : fs::directory_iterator(repo_path() + "/snapshots"))
    EXPECT_FALSE(fs::exists(fs::symlink_status(snap.path() / kTransformer))) << "linked: " << snap.path();
  server_.corrupt(kTransformer, false);
  const auto r = download(kFluxRepo);
  EXPECT_TRUE(hub::read_cached_repo(settings_.cache_dir, kFluxRepo).verified);
  EXPECT_LT(r.fetched, r.files);  // what was good before is kept
}

TEST_F(Hub, a_repo_larger_than_the_disk_is_refused_before_anything_is_fetched) {
  // 4 EiB: more than any disk statvfs can report free, so the check is the real one.
  server_.add_listed_file(kFluxRepo, "transformer/diffusion_pytorch_model-00002-of-00002.safetensors", uint64_t(1) << 62);
  const std::string why = error_of([&] { download(kFluxRepo); });
  EXPECT_TRUE(test::contains(why, "needs 4.0 EiB more in " + settings_.cache_dir)) << why;
  EXPECT_TRUE(test::contains(why, "free; free some space, or set HF_HUB_CACHE")) << why;
  EXPECT_EQ(requests_for("/cdn/"), 0);
  EXPECT_FALSE(has_partial_files(settings_.cache_dir));
}

TEST_F(Hub, a_gated_repo_needs_its_token) {
  server_.add_repo("gated-org/cogvx", test::golden_case("cogvx2b_t5_tiny"), "hf_right");
  std::string why = error_of([&] { download("gated-org/cogvx"); });
  for (const std::string& part : {std::string("401"), std::string("HF_TOKEN"), std::string("huggingface-cli login"),
                                  std::string("license"), server_.endpoint() + "/gated-org/cogvx"})
    EXPECT_TRUE(test::contains(why, part)) << part << " missing in: " << why;
  settings_.token = "hf_wrong";
  settings_.token_source = "HF_TOKEN";
  why = error_of([&] { download("gated-org/cogvx"); });
  EXPECT_TRUE(test::contains(why, "401 Unauthorized with the token from HF_TOKEN")) << why;
  settings_.token = "hf_right";
  const auto r = download("gated-org/cogvx");
  EXPECT_EQ(r.files, files_wanted(test::golden_case("cogvx2b_t5_tiny")));
  EXPECT_GT(requests_for("/gated-org/cogvx/resolve/"), 0);
  for (const auto& q : server_.requests())
    if (test::contains(q.target, "/resolve/") && q.authorization == "Bearer hf_right") return;
  ADD_FAILURE() << "no resolve request carried the token";
}

// Offline (a name no resolver knows, as with no network): said as such, not as the library's words on a URL.
TEST_F(Hub, an_unreachable_hub_is_said_in_plain_words) {
  settings_.endpoint = "http://hub.invalid";
  const std::string why = error_of([&] { download(kFluxRepo); });
  EXPECT_TRUE(test::contains(why, "no network: the Hugging Face Hub cannot be reached at http://hub.invalid")) << why;
  EXPECT_TRUE(test::contains(why, "check the connection")) << why;
  EXPECT_FALSE(test::contains(why, "/api/models/")) << why;
}

TEST_F(Hub, unknown_repos_and_revisions_are_named) {
  std::string why = error_of([&] { download("nobody/nothing"); });
  EXPECT_TRUE(test::contains(why, "nobody/nothing: the Hub answered 401")) << why;
  hub::DownloadOptions o;
  o.revision = "v9";
  why = error_of([&] { download(kFluxRepo, o); });
  EXPECT_TRUE(test::contains(why, "the revision v9: no such revision")) << why;
}

// A cache as huggingface_hub writes it, made here by hand: blobs named by sha256 (LFS) or git blob id,
// relative links in snapshots/<commit>/, refs/main.
TEST_F(Hub, a_cache_in_huggingface_hubs_layout_is_listed_resolved_verified_and_reused) {
  const std::string source = test::golden_case("cogvx2b_t5_tiny");
  const std::string id = "THUDM/CogVideoX-tiny";
  const fs::path repo = hub::repo_dir(settings_.cache_dir, id);
  const std::string commit = "0123456789abcdef0123456789abcdef01234567";
  fs::create_directories(repo / "blobs");
  fs::create_directories(repo / "refs");
  test::write_file((repo / "refs/main").string(), commit);
  for (const auto& e : fs::recursive_directory_iterator(source)) {
    const std::string rel = fs::relative(e.path(), source).string();
    if (!e.is_regular_file() || rel == "golden.safetensors") continue;
    const bool lfs = e.path().extension() == ".safetensors" || e.path().extension() == ".model";
    const std::string blob = lfs ? hub::sha256_of_file(e.path().string()) : hub::git_blob_sha1_of_file(e.path().string());
    fs::copy_file(e.path(), repo / "blobs" / blob, fs::copy_options::overwrite_existing);
    const fs::path link = repo / "snapshots" / commit / rel;
    fs::create_directories(link.parent_path());
    fs::create_symlink(fs::relative(repo / "blobs" / blob, link.parent_path()), link);
  }
  auto listed = hub::read_cached_repo(settings_.cache_dir, id);
  EXPECT_EQ(hub::list_cache(settings_.cache_dir).size(), 1u);
  EXPECT_EQ(listed.commit, commit);
  EXPECT_EQ(listed.family, "CogVideoX");
  EXPECT_TRUE(listed.complete);
  EXPECT_FALSE(listed.verified);  // nobody has hashed it yet
  EXPECT_EQ(hub::local_model_dir(id, settings_), (repo / "snapshots" / commit).string());
  EXPECT_EQ(hub::local_model_dir(source, settings_), source);  // a folder stays a folder
  const std::string why = error_of([&] { hub::local_model_dir("THUDM/absent", settings_); });
  EXPECT_TRUE(test::contains(why, "`dit-models download THUDM/absent`") && test::contains(why, settings_.cache_dir)) << why;

  auto v = hub::verify_repo(settings_.cache_dir, id, "main", {}, nullptr);
  EXPECT_EQ(v.files, files_wanted(source));
  EXPECT_TRUE(v.mismatched.empty());
  EXPECT_TRUE(v.unchecked.empty());
  EXPECT_TRUE(hub::read_cached_repo(settings_.cache_dir, id).verified);
  // A flipped byte in a blob: verify names the file; list no longer says verified.
  const fs::path blob = fs::canonical(repo / "snapshots" / commit / "vae/diffusion_pytorch_model.safetensors");
  std::string bytes = test::read_file(blob.string());
  bytes[1000] ^= 1;
  test::write_file(blob.string(), bytes);
  v = hub::verify_repo(settings_.cache_dir, id, "main", {}, nullptr);
  ASSERT_EQ(v.mismatched.size(), 1u);
  EXPECT_TRUE(test::contains(v.mismatched[0], "vae/diffusion_pytorch_model.safetensors")) << v.mismatched[0];
  EXPECT_FALSE(hub::read_cached_repo(settings_.cache_dir, id).verified);
  bytes[1000] ^= 1;
  test::write_file(blob.string(), bytes);

  // The same files on the server: the blobs already here are linked into the server's commit, not fetched.
  server_.add_repo(id, source);
  server_.forget_requests();
  const auto r = download(id);
  EXPECT_EQ(r.fetched, 0);
  EXPECT_EQ(requests_for("/resolve/"), 0);
  EXPECT_EQ(hub::snapshot_dir(settings_.cache_dir, id), r.snapshot);

  EXPECT_GT(hub::remove_repo(settings_.cache_dir, id), 0u);
  EXPECT_FALSE(fs::exists(repo));
}

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

  r = models({"remove", kFluxRepo});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(fs::exists(repo_path()));
  r = models({"remove", kFluxRepo});
  EXPECT_EQ(r.code, 3);
  EXPECT_TRUE(test::contains(r.err, "not in the cache")) << r.err;
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

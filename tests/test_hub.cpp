// engine/hub against a local server that answers as the Hugging Face Hub does (tests/hub/fake_hub.h),
// serving golden folders as repositories: a download compared file by file with its source, a dropped
// connection resumed with Range (within a run and by the next run), a corrupted file caught by its hash,
// a repo larger than any disk refused before anything is fetched, a gated repo, and a cache written by hand
// in huggingface_hub's layout read back. dit-launch and dit-models on that server: test_hub_tools.cpp.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "hub/cache.h"
#include "hub/hashing.h"
#include "hub/hub_fixture.h"
#include "plan/error.h"

namespace fs = std::filesystem;
using namespace studio;
using test::Hub;
using test::kFluxRepo;

namespace {

const char* kTransformer = "transformer/diffusion_pytorch_model.safetensors";

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

  // Its progress: each file from 0 to its own size (never another file's bytes), and every file said done.
  std::map<std::string, uint64_t> hashed;
  auto v = hub::verify_repo(settings_.cache_dir, id, "main", [&](const hub::Progress& p) {
    EXPECT_LE(p.file_bytes, p.file_total) << p.file;
    EXPECT_LE(p.bytes, p.total) << p.file;
    hashed[p.file] = std::max(hashed[p.file], p.file_bytes);
    if (p.file_bytes == p.file_total) EXPECT_GE(p.files_done, 1) << p.file;
  }, nullptr);
  EXPECT_EQ(int(hashed.size()), files_wanted(source));
  for (const auto& [file, bytes] : hashed)
    EXPECT_EQ(bytes, fs::file_size(repo / "snapshots" / commit / file)) << file;
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

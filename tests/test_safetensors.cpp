// The safetensors reader and writer on real files, good and broken.
#include <algorithm>
#include <cstring>
#include <filesystem>

#include "plan/model_folder.h"
#include "plan/partial_file.h"
#include "io/safetensors/folder_weights.h"
#include "io/safetensors/safetensors_file.h"
#include "plan/error.h"
#include "support.h"

using namespace studio;
using io::DType;

namespace {

// A file made by hand: 8-byte length, header text, data bytes.
void raw_file(const std::string& path, const std::string& header, size_t data_bytes, uint64_t claimed_len = 0) {
  std::string s(8, '\0');
  uint64_t n = claimed_len ? claimed_len : header.size();
  std::memcpy(s.data(), &n, 8);
  s += header + std::string(data_bytes, '\0');
  test::write_file(path, s);
}

class Safetensors : public ::testing::Test {
 protected:
  test::TempDir tmp_;
  std::string path(const char* name) { return tmp_.path(name); }
};

TEST_F(Safetensors, round_trip) {
  const float a[6] = {1, 2, 3, 4, 5, 6};
  const int64_t b[2] = {-7, 9};
  io::write_safetensors(path("rt.safetensors"), {{"a", DType::F32, {2, 3}, a}, {"b.c", DType::I64, {2}, b}},
                        {{"seed", "42"}});
  auto f = io::SafetensorsFile::open(path("rt.safetensors"));
  EXPECT_EQ(f->tensors().size(), size_t(2));
  const auto* ta = f->find("a");
  ASSERT_TRUE(ta);
  EXPECT_EQ(ta->shape, std::vector<int64_t>({2, 3}));
  EXPECT_EQ(std::memcmp(f->data(*ta), a, sizeof a), 0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(f->data(*ta)) % 8, uintptr_t(0));  // aligned data section
  const auto* tb = f->find("b.c");
  ASSERT_TRUE(tb);
  EXPECT_EQ(tb->dtype, DType::I64);
  EXPECT_EQ(std::memcmp(f->data(*tb), b, sizeof b), 0);
  EXPECT_EQ(f->metadata().at("seed"), std::string("42"));
  EXPECT_FALSE(f->find("missing"));
  EXPECT_FALSE(std::filesystem::exists(plan::partial_path(path("rt.safetensors"))));
}

// What a dead writer left is found by its pid alone: another process's partials (a pid that starts alike) and
// the finished files stay.
TEST_F(Safetensors, a_dead_writers_partials_are_removed_by_its_pid) {
  for (const char* name : {".a.mp4.partial-12.mp4", ".a.mp4.partial-12.mp4.json", ".b.safetensors.partial-12",
                           ".a.mp4.partial-123.mp4", "a.mp4", "a.mp4.partial-12.mp4"})
    test::write_file(path(name), "x");
  std::filesystem::create_directory(path(".frames.partial-12"));
  test::write_file(path(".frames.partial-12/0001.png"), "x");
  EXPECT_EQ(plan::remove_partials(tmp_.path(""), 12), 4);
  for (const char* gone : {".a.mp4.partial-12.mp4", ".a.mp4.partial-12.mp4.json", ".b.safetensors.partial-12",
                           ".frames.partial-12"})
    EXPECT_FALSE(std::filesystem::exists(path(gone))) << gone;
  for (const char* kept : {".a.mp4.partial-123.mp4", "a.mp4", "a.mp4.partial-12.mp4"})
    EXPECT_TRUE(std::filesystem::exists(path(kept))) << kept;
  EXPECT_EQ(plan::partial_path("/x/clip.mp4"), "/x/.clip.mp4.partial-" + std::to_string(::getpid()) + ".mp4");
  // The small files (a job file, MagCache's ratios) go through the same name, so the same cleanup finds them: a
  // folder standing at that name stops the write, and the file is not made.
  std::filesystem::create_directory(plan::partial_path(path("ratios.json")));
  EXPECT_TRUE(test::throws_with<InputError>([&] { plan::write_text_file(path("ratios.json"), "{}", "the ratios"); },
                                            {"ratios.json", "cannot write the ratios"}));
  EXPECT_FALSE(std::filesystem::exists(path("ratios.json")));
  std::filesystem::remove(plan::partial_path(path("ratios.json")));
  plan::write_text_file(path("ratios.json"), "{}", "the ratios");
  EXPECT_EQ(test::read_file(path("ratios.json")), "{}");
  EXPECT_EQ(plan::remove_partials(tmp_.path(""), ::getpid()), 0);  // nothing left behind
}

TEST_F(Safetensors, missing_file) {
  EXPECT_TRUE(test::throws_with<InputError>([&] { io::SafetensorsFile::open(path("nope.safetensors")); },
                                            {"nope.safetensors", "file not found"}));
}

TEST_F(Safetensors, shorter_than_header_length) {
  test::write_file(path("tiny.safetensors"), "abc");
  EXPECT_TRUE(test::throws_with<InputError>([&] { io::SafetensorsFile::open(path("tiny.safetensors")); },
                                            {"tiny.safetensors", "truncated", "3 bytes"}));
}

TEST_F(Safetensors, header_past_the_end) {
  raw_file(path("hdr.safetensors"), "{}", 0, 4096);
  EXPECT_TRUE(test::throws_with<InputError>([&] { io::SafetensorsFile::open(path("hdr.safetensors")); },
                                            {"header runs past the end", "4096"}));
}

TEST_F(Safetensors, header_not_json) {
  raw_file(path("json.safetensors"), "{not json", 0);
  EXPECT_TRUE(test::throws_with<InputError>([&] { io::SafetensorsFile::open(path("json.safetensors")); },
                                            {"not valid JSON"}));
}

TEST_F(Safetensors, unknown_dtype) {
  // F6_E2M3: a dtype the format names that no checkpoint the engine reads uses.
  raw_file(path("dt.safetensors"), R"({"w":{"dtype":"F6_E2M3","shape":[2],"data_offsets":[0,2]}})", 2);
  EXPECT_TRUE(test::throws_with<InputError>([&] { io::SafetensorsFile::open(path("dt.safetensors")); },
                                            {"tensor 'w'", "unknown dtype 'F6_E2M3'", "F8_E4M3"}));
  // fp8 is read (the fp8 single files).
  raw_file(path("f8.safetensors"), R"({"w":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", 2);
  EXPECT_EQ(io::SafetensorsFile::open(path("f8.safetensors"))->find("w")->dtype, io::DType::F8_E4M3);
}

TEST_F(Safetensors, truncated_data) {
  raw_file(path("trunc.safetensors"), R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8);
  EXPECT_TRUE(test::throws_with<InputError>([&] { io::SafetensorsFile::open(path("trunc.safetensors")); },
                                            {"trunc.safetensors", "truncated: the file holds", "of the",
                                             "its header describes", "fetch or copy it again"}));
}

TEST_F(Safetensors, shape_disagrees_with_offsets) {
  raw_file(path("size.safetensors"), R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", 16);
  EXPECT_TRUE(test::throws_with<InputError>([&] { io::SafetensorsFile::open(path("size.safetensors")); },
                                            {"tensor 'w'", "needs 12 bytes", "give 16"}));
}

// What the format forbids and its reference reader refuses, each named: counts that wrap at 2^64, a name
// given twice, bytes shared by two tensors, bytes that belong to none, a header that is not an object.
TEST_F(Safetensors, hostile_headers_are_refused_by_name) {
  auto refused = [&](const char* name, const std::string& header, size_t data,
                     std::initializer_list<const char*> parts) {
    raw_file(path(name), header, data);
    EXPECT_TRUE(test::throws_with<InputError>([&] { io::SafetensorsFile::open(path(name)); }, parts)) << name;
  };
  // 2^57 x 32 floats is 2^64 bytes: the byte count must not wrap to 0.
  refused("wrap.safetensors", R"({"prompt_embeds":{"dtype":"F32","shape":[1,144115188075855872,32],"data_offsets":[0,0]}})",
          0, {"wrap.safetensors", "tensor 'prompt_embeds'", "more bytes than any file can hold"});
  refused("wrap2.safetensors", R"({"w":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", 0,
          {"tensor 'w'", "more bytes than any file can hold"});
  refused("twice.safetensors",
          R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
          8, {"tensor 'w' is named twice"});
  refused("overlap.safetensors",
          R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})",
          16, {"tensor 'b' (bytes 0 to 16) overlaps tensor 'a' (bytes 0 to 16)"});
  refused("hole.safetensors",
          R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[4],"data_offsets":[80,96]}})",
          96, {"64 bytes before tensor 'b' (bytes 80 to 96) belong to no tensor", "cover the data section exactly"});
  refused("tail.safetensors", R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 24,
          {"8 bytes after the last tensor's data belong to no tensor"});
  refused("list.safetensors", R"([1, 2, 3])", 0, {"does not start with '{'"});
  refused("negative.safetensors", R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})", 0,
          {"tensor 'w'", "bad dimension"});
  refused("offsets.safetensors", R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", 4,
          {"tensor 'w'", "data_offsets is not a pair of byte offsets"});
  // Empty tensors take no bytes and may stand anywhere the data is covered.
  raw_file(path("empty.safetensors"),
           R"({"a":{"dtype":"F32","shape":[0,3],"data_offsets":[0,0]},"b":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})", 8);
  EXPECT_EQ(io::SafetensorsFile::open(path("empty.safetensors"))->tensors().size(), 2u);
}

TEST_F(Safetensors, write_into_missing_folder_fails_cleanly) {
  const float a[1] = {1};
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] { io::write_safetensors(path("no/such/dir/x.safetensors"), {{"a", DType::F32, {1}, a}}); },
      {"x.safetensors", "cannot write"}));
}

TEST_F(Safetensors, full_disk_leaves_nothing_behind) {
  // A file-size limit stands in for a full disk: the write fails part-way with EFBIG.
  std::vector<float> big(1 << 16, 1.0f);
  ::testing::AssertionResult threw = ::testing::AssertionFailure();
  test::with_file_size_limit(4096, [&] {
    threw = test::throws_with<InputError>(
        [&] { io::write_safetensors(path("full.safetensors"), {{"a", DType::F32, {int64_t(big.size())}, big.data()}}); },
        {"full.safetensors", "write failed", "nothing was left behind"});
  });
  EXPECT_TRUE(threw);
  EXPECT_FALSE(std::filesystem::exists(path("full.safetensors")));
  for (auto& e : std::filesystem::directory_iterator(tmp_.path()))
    EXPECT_FALSE(test::contains(e.path().filename().string(), "full.safetensors")) << e.path();
}

}  // namespace

// A model folder's weights checked from their headers: a reference folder passes, a file cut short and a
// shard its index names but the folder lacks are each named from the folder.
TEST_F(Safetensors, folder_weights_cut_short_or_missing_are_named) {
  const std::string dir = path("model");
  test::copy_tree(test::golden_case("cogvx2b_tiny"), dir);
  EXPECT_TRUE(io::weight_file_problems(dir).empty());
  const std::string file = dir + "/transformer/diffusion_pytorch_model.safetensors";
  std::filesystem::resize_file(file, std::filesystem::file_size(file) - 100);
  test::write_file(dir + "/vae/diffusion_pytorch_model.safetensors.index.json",
                   R"({"weight_map":{"a":"diffusion_pytorch_model-00002-of-00002.safetensors"}})");
  auto problems = io::weight_file_problems(dir);
  std::sort(problems.begin(), problems.end());
  ASSERT_EQ(problems.size(), size_t(2));
  for (const char* part : {"transformer/diffusion_pytorch_model.safetensors: truncated", "of the", "its header describes"})
    EXPECT_TRUE(test::contains(problems[0], part)) << problems[0];
  for (const char* part : {"vae/diffusion_pytorch_model-00002-of-00002.safetensors",
                           "named by diffusion_pytorch_model.safetensors.index.json", "missing"})
    EXPECT_TRUE(test::contains(problems[1], part)) << problems[1];
}

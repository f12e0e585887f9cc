// The GGUF reader and writer on real files (the reference case's city96-layout FLUX files), written ones
// and hand-made broken ones, each refused by name.
#include <cstring>
#include <filesystem>
#include <map>

#include "plan/partial_file.h"
#include "io/gguf/gguf_file.h"
#include "plan/error.h"
#include "support.h"

using namespace studio;
using plan::WeightFormat;

namespace {

// A GGUF file made by hand, field by field, little-endian as the format is.
struct Bytes {
  std::string s;
  Bytes& u32(uint32_t v) { return raw(&v, 4); }
  Bytes& u64(uint64_t v) { return raw(&v, 8); }
  Bytes& str(const std::string& v) {
    u64(v.size());
    s += v;
    return *this;
  }
  Bytes& raw(const void* p, size_t n) {
    s.append(static_cast<const char*>(p), n);
    return *this;
  }
  // A string KV.
  Bytes& kv(const std::string& key, const std::string& value) { return str(key).u32(8).str(value); }
  // A tensor info: ne innermost first, as the file holds it.
  Bytes& info(const std::string& name, const std::vector<uint64_t>& ne, uint32_t ggml_type, uint64_t offset) {
    str(name).u32(uint32_t(ne.size()));
    for (uint64_t d : ne) u64(d);
    return u32(ggml_type).u64(offset);
  }
  // Pads to the default alignment, then `n` data bytes.
  Bytes& data(size_t n) {
    s.append((32 - s.size() % 32) % 32 + n, '\0');
    return *this;
  }
};

Bytes header(uint64_t tensors, uint64_t kvs, uint32_t version = 3) {
  Bytes b;
  b.s = "GGUF";
  return b.u32(version).u64(tensors).u64(kvs);
}

class Gguf : public ::testing::Test {
 protected:
  test::TempDir tmp_;
  std::string path(const char* name) { return tmp_.path(name); }
  // Writes `b` as `name` and expects opening it to throw InputError naming the file and every one of `parts`.
  ::testing::AssertionResult refused(const char* name, const Bytes& b, std::initializer_list<const char*> parts) {
    test::write_file(path(name), b.s);
    auto r = test::throws_with<InputError>([&] { io::GgufFile::open(path(name)); }, parts);
    if (!r) return r;
    return test::throws_with<InputError>([&] { io::GgufFile::open(path(name)); }, {name});
  }
};

TEST_F(Gguf, round_trip) {
  const float a[6] = {1, 2, 3, 4, 5, 6};
  std::vector<uint8_t> q(2 * 34);  // two Q8_0 blocks: a row of 32 values, two rows
  for (size_t i = 0; i < q.size(); ++i) q[i] = uint8_t(i * 7 + 1);
  const uint16_t h[5] = {0x3c00, 0x4000, 0x4200, 0x4400, 0x4500};  // 10 bytes: the next tensor is padded
  const float conv[24] = {};
  io::write_gguf(path("rt.gguf"),
                 {{"a", WeightFormat::F32, {2, 3}, a},
                  {"q.weight", WeightFormat::Q8_0, {2, 32}, q.data()},
                  {"h", WeightFormat::F16, {5}, h},
                  {"conv", WeightFormat::F32, {2, 3, 4}, conv}},
                 {{"general.architecture", "flux"}}, {{"general.quantization_version", 2}},
                 {{"comfy.gguf.orig_shape.conv", {1, 2, 3, 4, 1}}});
  auto f = io::GgufFile::open(path("rt.gguf"));
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 32u);
  ASSERT_EQ(f->tensors().size(), 4u);
  EXPECT_EQ(f->tensors()[1].name, "q.weight");  // in the file's order

  const auto* ta = f->find("a");
  ASSERT_TRUE(ta);
  EXPECT_EQ(ta->shape, std::vector<int64_t>({2, 3}));
  EXPECT_EQ(ta->format, WeightFormat::F32);
  EXPECT_EQ(ta->bytes, sizeof a);
  EXPECT_EQ(std::memcmp(f->data(*ta), a, sizeof a), 0);
  const auto* tq = f->find("q.weight");
  ASSERT_TRUE(tq);
  EXPECT_EQ(tq->shape, std::vector<int64_t>({2, 32}));  // written as ne = [32, 2], read back outermost first
  EXPECT_EQ(tq->format, WeightFormat::Q8_0);
  EXPECT_EQ(tq->numel(), 64);
  EXPECT_EQ(tq->bytes, q.size());
  EXPECT_EQ(std::memcmp(f->data(*tq), q.data(), q.size()), 0);
  const auto* th = f->find("h");
  ASSERT_TRUE(th);
  EXPECT_EQ(th->format, WeightFormat::F16);
  EXPECT_EQ(std::memcmp(f->data(*th), h, sizeof h), 0);
  const auto* tc = f->find("conv");
  ASSERT_TRUE(tc);
  EXPECT_EQ(tc->shape, std::vector<int64_t>({1, 2, 3, 4, 1}));  // city96's original shape
  for (const auto& t : f->tensors()) {
    EXPECT_EQ(t.offset % 32, 0u) << t.name;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(f->data(t)) % 32, uintptr_t(0)) << t.name;
  }
  EXPECT_FALSE(f->find("missing"));

  EXPECT_EQ(f->string_value("general.architecture"), std::optional<std::string>("flux"));
  EXPECT_EQ(f->int_value("general.quantization_version"), std::optional<int64_t>(2));
  EXPECT_EQ(f->int_array_value("comfy.gguf.orig_shape.conv"), std::optional<std::vector<int64_t>>({1, 2, 3, 4, 1}));
  EXPECT_FALSE(f->string_value("general.quantization_version"));  // a uint32, not a string
  EXPECT_FALSE(f->int_value("general.architecture"));
  EXPECT_FALSE(f->int_value("missing"));
  EXPECT_FALSE(f->int_array_value("general.architecture"));
  EXPECT_EQ(f->keys(), std::vector<std::string>({"comfy.gguf.orig_shape.conv", "general.architecture",
                                                 "general.quantization_version"}));
  EXPECT_FALSE(std::filesystem::exists(plan::partial_path(path("rt.gguf"))));
}

TEST_F(Gguf, alignment_is_the_files) {
  const float a[3] = {1, 2, 3}, b[1] = {4};
  io::write_gguf(path("al.gguf"), {{"a", WeightFormat::F32, {3}, a}, {"b", WeightFormat::F32, {1}, b}}, {},
                 {{"general.alignment", 64}});
  auto f = io::GgufFile::open(path("al.gguf"));
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(f->find("b")->offset, 64u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(f->data(*f->find("b"))) % 64, uintptr_t(0));
  EXPECT_EQ(std::memcmp(f->data(*f->find("b")), b, sizeof b), 0);
}

TEST_F(Gguf, values_of_every_integer_type) {
  Bytes b = header(0, 5);
  b.str("u8").u32(0).raw("\xff", 1);
  b.str("i16").u32(3).raw("\xfe\xff", 2);
  b.str("yes").u32(7).raw("\x01", 1);
  b.str("big").u32(10).u64(~0ull);  // past int64's range
  b.str("nested").u32(9).u32(9).u64(2).u32(5).u64(1).u32(7).u32(8).u64(1).str("x");  // [[7], ["x"]]
  test::write_file(path("ints.gguf"), b.s);
  auto f = io::GgufFile::open(path("ints.gguf"));
  EXPECT_EQ(f->int_value("u8"), std::optional<int64_t>(255));
  EXPECT_EQ(f->int_value("i16"), std::optional<int64_t>(-2));
  EXPECT_EQ(f->int_value("yes"), std::optional<int64_t>(1));
  EXPECT_FALSE(f->int_value("big"));
  EXPECT_FALSE(f->int_array_value("nested"));
  EXPECT_TRUE(f->tensors().empty());
}

// The reference case's files, made by city96's tools and llama-quantize: what golden.json says of them.
TEST_F(Gguf, reads_the_reference_files) {
  const auto golden = test::golden_json("flux_gguf_tiny");
  const std::map<std::string, WeightFormat> quant = {{"transformer-Q8_0.gguf", WeightFormat::Q8_0},
                                                     {"transformer-Q4_0.gguf", WeightFormat::Q4_0}};
  ASSERT_EQ(golden["transformer_files"].size(), quant.size());
  for (const auto& file : golden["transformer_files"]) {
    const std::string name = file["file"];
    SCOPED_TRACE(name);
    auto f = io::GgufFile::open(test::golden_case("flux_gguf_tiny") + "/" + name);
    EXPECT_EQ(f->tensors().size(), 60u);
    EXPECT_EQ(f->string_value("general.architecture"), std::optional<std::string>("flux"));
    EXPECT_EQ(f->int_value("general.file_type"), std::optional<int64_t>(file["file_type"].get<int64_t>()));
    const auto* qkv = f->find("double_blocks.0.img_attn.qkv.weight");
    ASSERT_TRUE(qkv);
    EXPECT_EQ(qkv->shape, std::vector<int64_t>({96, 32}));
    EXPECT_EQ(qkv->format, quant.at(name));
    ASSERT_TRUE(f->find("img_in.weight"));
    EXPECT_EQ(f->find("img_in.weight")->format, WeightFormat::F32);
    std::map<std::string, int> counts;
    for (const auto& t : f->tensors()) {
      ++counts[plan::format_info(t.format).name];
      EXPECT_EQ(file["tensor_types"].at(t.name).get<std::string>(), plan::format_info(t.format).name) << t.name;
    }
    EXPECT_EQ(counts, file["tensor_type_counts"].get<decltype(counts)>());
  }
}

TEST_F(Gguf, missing_file) {
  EXPECT_TRUE(test::throws_with<InputError>([&] { io::GgufFile::open(path("nope.gguf")); },
                                            {"nope.gguf", "file not found"}));
}

TEST_F(Gguf, truncated_header) {
  EXPECT_TRUE(refused("short.gguf", Bytes{"GGUF\x03"}, {"truncated", "5 bytes", "24-byte header"}));
  EXPECT_TRUE(refused("empty.gguf", Bytes{}, {"truncated", "0 bytes"}));
  EXPECT_TRUE(refused("key.gguf", header(0, 1).str("general.name").u32(8).u64(100),
                      {"truncated", "key 'general.name' needs 100 bytes"}));
}

TEST_F(Gguf, bad_magic) {
  EXPECT_TRUE(refused("magic.gguf", Bytes{std::string("GGML\x03\0\0\0", 8) + std::string(16, '\0')},
                      {"starts with \"GGML\"", "not a GGUF file"}));
}

TEST_F(Gguf, versions) {
  EXPECT_TRUE(refused("v1.gguf", header(0, 0, 1), {"GGUF version 1 is not read", "versions read are 2 and 3"}));
  EXPECT_TRUE(refused("v4.gguf", header(0, 0, 4), {"GGUF version 4 is not read", "versions read are 2 and 3"}));
  EXPECT_TRUE(refused("be.gguf", header(0, 0, 0x03000000), {"big-endian GGUF file (version 3)"}));
  test::write_file(path("v2.gguf"), header(0, 1, 2).kv("general.architecture", "flux").s);
  EXPECT_EQ(io::GgufFile::open(path("v2.gguf"))->version(), 2u);
}

TEST_F(Gguf, unknown_kv_type) {
  EXPECT_TRUE(refused("kv.gguf", header(0, 1).str("general.name").u32(13).u64(0),
                      {"key 'general.name' has value type 13", "0, uint8, to 12, float64"}));
  EXPECT_TRUE(refused("elem.gguf", header(0, 1).str("list").u32(9).u32(99).u64(0), {"key 'list' has value type 99"}));
}

TEST_F(Gguf, key_given_twice) {
  EXPECT_TRUE(refused("twice.gguf", header(0, 2).kv("general.name", "a").kv("general.name", "b"),
                      {"key 'general.name' is given twice"}));
}

TEST_F(Gguf, bad_alignment) {
  EXPECT_TRUE(refused("align3.gguf", header(0, 1).str("general.alignment").u32(4).u32(48),
                      {"general.alignment is 48, not a power of two"}));
  EXPECT_TRUE(refused("align_type.gguf", header(0, 1).str("general.alignment").u32(10).u64(32),
                      {"general.alignment is a uint64", "uint32"}));
}

TEST_F(Gguf, unknown_ggml_type) {
  EXPECT_TRUE(refused("iq.gguf", header(1, 0).info("x", {256}, 19, 0).data(256),
                      {"tensor 'x' has ggml type 19 (IQ1_S), which is not read",
                       "the types read are F32, F16, BF16, Q8_0, Q5_0, Q5_1, Q4_0, Q4_1, Q6_K, Q5_K, Q4_K, Q3_K, "
                       "Q2_K"}));
  EXPECT_TRUE(refused("t99.gguf", header(1, 0).info("y", {4}, 99, 0).data(16), {"tensor 'y' has ggml type 99,"}));
}

TEST_F(Gguf, five_dimensions) {
  EXPECT_TRUE(refused("dims.gguf", header(1, 0).info("x", {1, 1, 1, 1, 2}, 0, 0).data(8),
                      {"tensor 'x' has 5 dimensions", "1 to 4", "comfy.gguf.orig_shape.x"}));
  EXPECT_TRUE(refused("dims0.gguf", header(1, 0).info("x", {}, 0, 0).data(8), {"tensor 'x' has 0 dimensions"}));
}

TEST_F(Gguf, zero_dimension) {
  EXPECT_TRUE(refused("zero.gguf", header(1, 0).info("x", {4, 0}, 0, 0).data(16),
                      {"tensor 'x' has dimensions ne = [4, 0]", "at least 1"}));
  EXPECT_TRUE(refused("neg.gguf", header(1, 0).info("x", {~0ull}, 0, 0).data(16),
                      {"tensor 'x' has dimensions ne = [18446744073709551615]", "below 2^63"}));
}

TEST_F(Gguf, partial_block) {
  EXPECT_TRUE(refused("block.gguf", header(1, 0).info("w", {33, 2}, 8, 0).data(256),
                      {"tensor 'w' is Q8_0 with rows of 33 values", "32-value blocks"}));
}

TEST_F(Gguf, size_overflow) {
  EXPECT_TRUE(refused("elems.gguf", header(1, 0).info("w", {1ull << 32, 1ull << 32}, 0, 0).data(16),
                      {"tensor 'w'", "more elements than any file can hold"}));
  EXPECT_TRUE(refused("bytes.gguf", header(1, 0).info("w", {1ull << 62}, 0, 0).data(16),
                      {"tensor 'w' of F32", "more bytes than any file can hold"}));
}

TEST_F(Gguf, offset_past_the_end) {
  EXPECT_TRUE(refused("end.gguf", header(1, 0).info("w", {8}, 0, 32).data(40),
                      {"truncated", "tensor 'w' (bytes 32 to 64 of the data section)", "holds 40 bytes"}));
  EXPECT_TRUE(refused("start.gguf", header(1, 0).info("w", {8}, 0, 0),
                      {"truncated", "the data section starts at byte", "past the end of the file"}));
}

TEST_F(Gguf, overlapping_data) {
  EXPECT_TRUE(refused("overlap.gguf", header(2, 0).info("a", {16}, 0, 0).info("b", {8}, 0, 32).data(64),
                      {"tensor 'b' (bytes 32 to 64 of the data section) overlaps tensor 'a' (bytes 0 to 64",
                       "bytes of its own"}));
}

TEST_F(Gguf, misaligned_offset) {
  EXPECT_TRUE(refused("misaligned.gguf", header(1, 0).info("w", {2}, 0, 4).data(16),
                      {"tensor 'w' starts at byte 4 of the data section", "alignment, 32"}));
}

TEST_F(Gguf, tensor_named_twice) {
  EXPECT_TRUE(refused("twice.gguf", header(2, 0).info("w", {8}, 0, 0).info("w", {8}, 0, 32).data(64),
                      {"tensor 'w' is named twice"}));
}

TEST_F(Gguf, huge_counts) {
  EXPECT_TRUE(refused("tensors.gguf", header(1ull << 40, 0), {"the header claims 1099511627776 tensors", "truncated"}));
  EXPECT_TRUE(refused("keys.gguf", header(0, ~0ull), {"the header claims 18446744073709551615 keys"}));
  EXPECT_TRUE(refused("array.gguf", header(0, 1).str("tokens").u32(9).u32(8).u64(1ull << 60).u64(0),
                      {"key 'tokens' claims 1152921504606846976 string elements", "bytes left in the file"}));
  EXPECT_TRUE(refused("name.gguf", header(0, 1).u64(1ull << 62).u64(0), {"truncated", "key 0's name"}));
}

TEST_F(Gguf, deep_arrays) {
  Bytes b = header(0, 1).str("deep").u32(9);
  for (int i = 0; i < 20; ++i) b.u32(9).u64(1);
  EXPECT_TRUE(refused("deep.gguf", b, {"key 'deep' nests arrays more than 8 deep"}));
}

TEST_F(Gguf, orig_shape_mismatch) {
  const float a[6] = {};
  io::write_gguf(path("orig.gguf"), {{"w", WeightFormat::F32, {2, 3}, a}}, {}, {},
                 {{"comfy.gguf.orig_shape.w", {1, 2, 4}}});
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] { io::GgufFile::open(path("orig.gguf")); },
      {"orig.gguf", "key comfy.gguf.orig_shape.w gives the shape [1, 2, 4]", "tensor 'w''s 6 elements ([2, 3])"}));
  io::write_gguf(path("neg.gguf"), {{"w", WeightFormat::F32, {2, 3}, a}}, {}, {},
                 {{"comfy.gguf.orig_shape.w", {-2, -3}}});
  EXPECT_TRUE(test::throws_with<InputError>([&] { io::GgufFile::open(path("neg.gguf")); },
                                            {"gives the shape [-2, -3]", "at least 1"}));
  io::write_gguf(path("str.gguf"), {{"w", WeightFormat::F32, {2, 3}, a}}, {{"comfy.gguf.orig_shape.w", "[2, 3]"}});
  EXPECT_TRUE(test::throws_with<InputError>([&] { io::GgufFile::open(path("str.gguf")); },
                                            {"key comfy.gguf.orig_shape.w is not a list", "integers"}));
}

TEST_F(Gguf, write_into_missing_folder_fails_cleanly) {
  const float a[1] = {1};
  EXPECT_TRUE(test::throws_with<InputError>(
      [&] { io::write_gguf(path("no/such/dir/x.gguf"), {{"a", WeightFormat::F32, {1}, a}}, {}); },
      {"x.gguf", "cannot write"}));
}

}  // namespace

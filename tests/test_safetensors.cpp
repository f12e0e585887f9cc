// The safetensors reader and writer on real files, good and broken.
#include <QTemporaryDir>
#include <QtTest>

#include <cstring>
#include <filesystem>

#include "io/safetensors_file.h"
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

}  // namespace

class TestSafetensors : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  std::string path(const char* name) { return (tmp_.path() + "/" + name).toStdString(); }

 private Q_SLOTS:
  void round_trip() {
    const float a[6] = {1, 2, 3, 4, 5, 6};
    const int64_t b[2] = {-7, 9};
    io::write_safetensors(path("rt.safetensors"),
                          {{"a", DType::F32, {2, 3}, a}, {"b.c", DType::I64, {2}, b}}, {{"seed", "42"}});
    auto f = io::SafetensorsFile::open(path("rt.safetensors"));
    QCOMPARE(f->tensors().size(), size_t(2));
    const auto* ta = f->find("a");
    QVERIFY(ta);
    QCOMPARE(ta->shape, std::vector<int64_t>({2, 3}));
    QCOMPARE(std::memcmp(f->data(*ta), a, sizeof a), 0);
    QCOMPARE(reinterpret_cast<uintptr_t>(f->data(*ta)) % 8, uintptr_t(0));  // aligned data section
    const auto* tb = f->find("b.c");
    QCOMPARE(tb->dtype, DType::I64);
    QCOMPARE(std::memcmp(f->data(*tb), b, sizeof b), 0);
    QCOMPARE(f->metadata().at("seed"), std::string("42"));
    QVERIFY(!f->find("missing"));
    QVERIFY(!std::filesystem::exists(path("rt.safetensors") + ".partial-" + std::to_string(getpid())));
  }

  void missing_file() {
    QVERIFY(test::throws_with<InputError>([&] { io::SafetensorsFile::open(path("nope.safetensors")); },
                                          {"nope.safetensors", "file not found"}));
  }

  void shorter_than_header_length() {
    test::write_file(path("tiny.safetensors"), "abc");
    QVERIFY(test::throws_with<InputError>([&] { io::SafetensorsFile::open(path("tiny.safetensors")); },
                                          {"tiny.safetensors", "truncated", "3 bytes"}));
  }

  void header_past_the_end() {
    raw_file(path("hdr.safetensors"), "{}", 0, 4096);
    QVERIFY(test::throws_with<InputError>([&] { io::SafetensorsFile::open(path("hdr.safetensors")); },
                                          {"header runs past the end", "4096"}));
  }

  void header_not_json() {
    raw_file(path("json.safetensors"), "{not json", 0);
    QVERIFY(test::throws_with<InputError>([&] { io::SafetensorsFile::open(path("json.safetensors")); },
                                          {"not valid JSON"}));
  }

  void unknown_dtype() {
    raw_file(path("dt.safetensors"), R"({"w":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", 2);
    QVERIFY(test::throws_with<InputError>([&] { io::SafetensorsFile::open(path("dt.safetensors")); },
                                          {"tensor 'w'", "unknown dtype 'F8_E4M3'"}));
  }

  void truncated_data() {
    raw_file(path("trunc.safetensors"), R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8);
    QVERIFY(test::throws_with<InputError>([&] { io::SafetensorsFile::open(path("trunc.safetensors")); },
                                          {"tensor 'w'", "truncated data", "holds 8"}));
  }

  void shape_disagrees_with_offsets() {
    raw_file(path("size.safetensors"), R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", 16);
    QVERIFY(test::throws_with<InputError>([&] { io::SafetensorsFile::open(path("size.safetensors")); },
                                          {"tensor 'w'", "needs 12 bytes", "give 16"}));
  }

  void write_into_missing_folder_fails_cleanly() {
    const float a[1] = {1};
    QVERIFY(test::throws_with<InputError>(
        [&] { io::write_safetensors(path("no/such/dir/x.safetensors"), {{"a", DType::F32, {1}, a}}); },
        {"x.safetensors", "cannot write"}));
  }

  void full_disk_leaves_nothing_behind() {
    // A file-size limit stands in for a full disk: the write fails part-way with EFBIG.
    std::vector<float> big(1 << 16, 1.0f);
    bool threw = false;
    test::with_file_size_limit(4096, [&] {
      threw = test::throws_with<InputError>(
          [&] { io::write_safetensors(path("full.safetensors"), {{"a", DType::F32, {int64_t(big.size())}, big.data()}}); },
          {"full.safetensors", "write failed", "nothing was left behind"});
    });
    QVERIFY(threw);
    QVERIFY(!std::filesystem::exists(path("full.safetensors")));
    for (auto& e : std::filesystem::directory_iterator(tmp_.path().toStdString()))
      QVERIFY2(e.path().filename().string().find("full.safetensors") == std::string::npos, e.path().c_str());
  }
};

QTEST_APPLESS_MAIN(TestSafetensors)
#include "test_safetensors.moc"

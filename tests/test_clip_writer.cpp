// Export: every format written and read back with libavformat; failures leave nothing behind.
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <set>

#include "plan/error.h"
#include "support.h"
#include "video/clip_writer.h"

using namespace studio;
namespace fs = std::filesystem;

namespace {

// A moving gradient, so that encoders have something to encode.
std::vector<uint8_t> frame(int w, int h, int t) {
  std::vector<uint8_t> rgb(size_t(w * h * 3));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint8_t* p = &rgb[size_t((y * w + x) * 3)];
      p[0] = uint8_t((x * 4 + t * 16) & 255);
      p[1] = uint8_t((y * 4) & 255);
      p[2] = uint8_t((t * 32) & 255);
    }
  return rgb;
}

video::ClipInfo info(int w, int h) {
  video::ClipInfo i;
  i.width = w;
  i.height = h;
  i.fps = 8;
  i.metadata = {{"prompt", "A cat sits on a red mat."}, {"seed", "42"}, {"model", "cogvx2b_tiny"}};
  return i;
}

void write(const std::string& path, int frames, int w = 96, int h = 64) {
  video::ClipWriter out(path, info(w, h));
  for (int t = 0; t < frames; ++t) out.add_frame(frame(w, h, t).data());
  out.finish();
}

}  // namespace

class TestClipWriter : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  std::string path(const std::string& name) { return tmp_.path().toStdString() + "/" + name; }
  // Only the named entries exist in the temporary folder: no partial files.
  void expect_only(std::initializer_list<std::string> names) {
    std::set<std::string> want(names), have;
    for (auto& e : fs::directory_iterator(tmp_.path().toStdString())) have.insert(e.path().filename().string());
    for (const auto& h : have) QVERIFY2(want.count(h), ("unexpected file left: " + h).c_str());
  }

 private Q_SLOTS:
  void formats_by_extension() {
    QCOMPARE(video::format_for("a.mp4"), video::Format::MP4);
    QCOMPARE(video::format_for("a.WebM"), video::Format::WebM);
    QCOMPARE(video::format_for("a.gif"), video::Format::GIF);
    QCOMPARE(video::format_for("frames/"), video::Format::PNG);
    QVERIFY(test::throws_with<InputError>([] { video::format_for("a.avi"); }, {"a.avi", "'.avi'", ".mp4"}));
  }

  void each_format_reads_back_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("codec");
    QTest::newRow("mp4") << "clip.mp4" << "h264";
    QTest::newRow("webm") << "clip.webm" << "vp9";
    QTest::newRow("gif") << "clip.gif" << "gif";
    QTest::newRow("png") << "frames/" << "png";
  }
  void each_format_reads_back() {
    QFETCH(QString, name);
    QFETCH(QString, codec);
    const std::string p = path(name.toStdString());
    write(p, 9);
    auto probe = video::probe_clip(p);
    QCOMPARE(probe.frames, 9);
    QCOMPARE(probe.width, 96);
    QCOMPARE(probe.height, 64);
    QCOMPARE(QString::fromStdString(probe.codec), codec);
    if (name != "frames/" && name != "clip.gif") {
      QVERIFY2(std::abs(probe.duration_s - 9.0 / 8) < 0.01, qPrintable(QString::number(probe.duration_s)));
      QCOMPARE(probe.metadata["prompt"], std::string("A cat sits on a red mat."));
      QCOMPARE(probe.metadata["seed"], std::string("42"));
    }
    // Every format has the sidecar, the only place a GIF keeps its settings.
    const std::string side = name == "frames/" ? p + "clip.json" : p + ".json";
    auto j = nlohmann::json::parse(test::read_file(side));
    QCOMPARE(j["prompt"].get<std::string>(), std::string("A cat sits on a red mat."));
    QCOMPARE(j["frames"].get<int>(), 9);
  }

  void odd_sizes_are_refused() {
    QVERIFY(test::throws_with<InputError>([&] { write(path("odd.mp4"), 1, 95, 64); }, {"odd.mp4", "95x64", "even"}));
    expect_only({"clip.mp4", "clip.mp4.json", "clip.webm", "clip.webm.json", "clip.gif", "clip.gif.json", "frames"});
  }

  void abandoned_writer_leaves_nothing() {
    {
      video::ClipWriter out(path("abandoned.mp4"), info(96, 64));
      out.add_frame(frame(96, 64, 0).data());
    }  // destroyed without finish(): a cancelled run
    QVERIFY(!fs::exists(path("abandoned.mp4")));
    expect_only({"clip.mp4", "clip.mp4.json", "clip.webm", "clip.webm.json", "clip.gif", "clip.gif.json", "frames"});
  }

  void unwritable_folder_fails_cleanly() {
    QVERIFY(test::throws_with<InputError>([&] { write(path("no/such/clip.mp4"), 1); }, {"clip.mp4", "cannot write"}));
  }

  void full_disk_fails_cleanly() {
    bool threw = false;
    test::with_file_size_limit(2048, [&] {
      try {
        write(path("full.webm"), 24, 256, 256);
      } catch (const InputError& e) {
        threw = true;
        qInfo("full disk: %s", e.what());
      }
    });
    QVERIFY(threw);
    QVERIFY(!fs::exists(path("full.webm")));
    expect_only({"clip.mp4", "clip.mp4.json", "clip.webm", "clip.webm.json", "clip.gif", "clip.gif.json", "frames"});
  }
};

QTEST_APPLESS_MAIN(TestClipWriter)
#include "test_clip_writer.moc"

// Export: every format written and read back with libavformat; failures leave nothing behind.
#include <filesystem>
#include <cstdio>

#include "plan/error.h"
#include "support.h"
#include "video/clip_writer.h"
#include "video/embedded_settings.h"

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
  // A seed past what a double holds exactly, and a prompt that reads as a number.
  i.metadata = {{"prompt", "A cat sits on a red mat."}, {"seed", "9007199254740993"}, {"model", "cogvx2b_tiny"},
                {"guidance_scale", "6.5"}, {"use_fbcache", "true"}, {"negative_prompt", "42"}};
  return i;
}

void write(const std::string& path, int frames, int w = 96, int h = 64) {
  video::ClipWriter out(path, info(w, h));
  for (int t = 0; t < frames; ++t) out.add_frame(frame(w, h, t).data());
  out.finish();
}

class ClipWriter : public ::testing::Test {
 protected:
  test::TempDir tmp_;
  std::string path(const std::string& name) { return tmp_.path(name); }
  // The test's folder is empty: a failed write left no partial file.
  void expect_empty() {
    for (auto& e : fs::directory_iterator(tmp_.path())) ADD_FAILURE() << "unexpected file left: " << e.path().filename();
  }
};

TEST_F(ClipWriter, formats_by_extension) {
  EXPECT_EQ(video::format_for("a.mp4"), video::Format::MP4);
  EXPECT_EQ(video::format_for("a.WebM"), video::Format::WebM);
  EXPECT_EQ(video::format_for("a.gif"), video::Format::GIF);
  EXPECT_EQ(video::format_for("frames/"), video::Format::PNG);
  EXPECT_TRUE(test::throws_with<InputError>([] { video::format_for("a.avi"); }, {"a.avi", "'.avi'", ".mp4"}));
}

struct Format {
  const char* name;
  const char* codec;
};

class EachFormat : public ClipWriter, public ::testing::WithParamInterface<Format> {};

TEST_P(EachFormat, reads_back) {
  const std::string name = GetParam().name;
  const std::string p = path(name);
  write(p, 9);
  auto probe = video::probe_clip(p);
  EXPECT_EQ(probe.frames, 9);
  EXPECT_EQ(probe.width, 96);
  EXPECT_EQ(probe.height, 64);
  EXPECT_EQ(probe.codec, std::string(GetParam().codec));
  if (name != "frames/" && name != "clip.gif") {
    EXPECT_LT(std::abs(probe.duration_s - 9.0 / 8), 0.01) << probe.duration_s;
    EXPECT_EQ(probe.metadata["prompt"], std::string("A cat sits on a red mat."));
    EXPECT_EQ(probe.metadata["seed"], std::string("9007199254740993"));
  }
  // Every format has the sidecar, the only place a GIF keeps its settings.
  const std::string side = name == "frames/" ? p + "clip.json" : p + ".json";
  auto j = nlohmann::json::parse(test::read_file(side));
  EXPECT_EQ(j["prompt"].get<std::string>(), std::string("A cat sits on a red mat."));
  EXPECT_EQ(j["frames"].get<int>(), 9);
  // Numbers and switches typed as JSON has them, the seed exact; text stays text.
  EXPECT_TRUE(j["seed"].is_number_unsigned()) << j["seed"];
  EXPECT_EQ(j["seed"].get<uint64_t>(), 9007199254740993ull);
  EXPECT_EQ(j["guidance_scale"].get<double>(), 6.5);
  EXPECT_EQ(j["use_fbcache"], true);
  EXPECT_EQ(j["negative_prompt"], "42");
}

INSTANTIATE_TEST_SUITE_P(Formats, EachFormat,
                         ::testing::Values(Format{"clip.mp4", "h264"}, Format{"clip.webm", "vp9"},
                                           Format{"clip.gif", "gif"}, Format{"frames/", "png"}),
                         [](const auto& info) { return std::string(info.param.codec); });

TEST_F(ClipWriter, odd_sizes_are_refused) {
  EXPECT_TRUE(test::throws_with<InputError>([&] { write(path("odd.mp4"), 1, 95, 64); }, {"odd.mp4", "95x64", "even"}));
  expect_empty();
}

TEST_F(ClipWriter, abandoned_writer_leaves_nothing) {
  {
    video::ClipWriter out(path("abandoned.mp4"), info(96, 64));
    out.add_frame(frame(96, 64, 0).data());
  }  // destroyed without finish(): a cancelled run
  EXPECT_FALSE(fs::exists(path("abandoned.mp4")));
  expect_empty();
}

// The clip cannot be moved into place (a folder took its name meanwhile): the sidecar of an earlier clip of that
// name is as it was, and nothing the writer began is left.
TEST_F(ClipWriter, a_clip_that_cannot_be_placed_leaves_what_was_there) {
  test::write_file(path("clip.mp4.json"), "the earlier clip's settings");
  {
    video::ClipWriter out(path("clip.mp4"), info(96, 64));
    out.add_frame(frame(96, 64, 0).data());
    fs::create_directories(path("clip.mp4/taken"));
    EXPECT_TRUE(test::throws_with<InputError>([&] { out.finish(); },
                                              {"--output", "clip.mp4", "cannot move the finished clip into place"}));
  }
  EXPECT_EQ(test::read_file(path("clip.mp4.json")), "the earlier clip's settings");
  fs::remove_all(path("clip.mp4"));
  fs::remove(path("clip.mp4.json"));
  expect_empty();
}

TEST_F(ClipWriter, unwritable_folder_fails_cleanly) {
  EXPECT_TRUE(test::throws_with<InputError>([&] { write(path("no/such/clip.mp4"), 1); }, {"clip.mp4", "cannot write"}));
}

TEST_F(ClipWriter, full_disk_fails_cleanly) {
  bool threw = false;
  test::with_file_size_limit(2048, [&] {
    try {
      write(path("full.webm"), 24, 256, 256);
    } catch (const InputError& e) {
      threw = true;
      std::printf("full disk: %s\n", e.what());
    }
  });
  EXPECT_TRUE(threw);
  EXPECT_FALSE(fs::exists(path("full.webm")));
  expect_empty();
}

}  // namespace

// The settings in a GIF's comment and a JPEG's: read back whole however long (a GIF's in 255-byte sub-blocks,
// a JPEG's up to its segment's limit), the rest of the file untouched; what is not such a file is refused.
TEST(EmbeddedSettings, comments_are_written_and_read_back) {
  std::string text(700, 'x');
  text += " \"prompt\": \"a paper boat\"";
  // A GIF89a of 2 x 1 pixels with a 2-colour global table, one image: its blocks start at 13 + 6.
  const std::vector<uint8_t> gif{'G', 'I', 'F', '8', '9', 'a', 2, 0, 1, 0, 0x80, 0, 0, 0, 0, 0, 255, 255, 255,
                                 0x2C, 0, 0, 0, 0, 2, 0, 1, 0, 0, 2, 2, 0x44, 0x01, 0, 0x3B};
  const auto with = video::gif_with_comment(gif, text, "a.gif");
  EXPECT_EQ(video::embedded_comment(with), text);
  EXPECT_EQ(with.size(), gif.size() + 2 + text.size() + 3 + 1);  // 3 sub-blocks of 255, 255 and the rest
  EXPECT_TRUE(std::equal(gif.begin() + 19, gif.end(), with.end() - long(gif.size() - 19)));
  EXPECT_EQ(video::embedded_comment(gif), "");
  const std::vector<uint8_t> jpeg{0xFF, 0xD8, 0xFF, 0xDB, 0x00, 0x04, 1, 2, 0xFF, 0xDA, 0, 2, 0xFF, 0xD9};
  EXPECT_EQ(video::embedded_comment(video::jpeg_with_comment(jpeg, text, "a.jpg")), text);
  const std::string huge(70000, 'y');
  EXPECT_EQ(video::embedded_comment(video::jpeg_with_comment(jpeg, huge, "a.jpg")).size(), 65533u);
  // A simple WebP (one VP8L chunk) becomes an extended one: VP8X first, with the XMP flag and the canvas size.
  const std::vector<uint8_t> webp{'R', 'I', 'F', 'F', 16, 0, 0, 0, 'W', 'E', 'B', 'P', 'V', 'P', '8', 'L', 3, 0, 0, 0,
                                  0x2F, 1, 2, 0};
  const std::string xml_hostile = text + " <b> & </rdf:li>";
  const auto with_xmp = video::webp_with_xmp(webp, xml_hostile, 640, 360, "a.webp");
  EXPECT_EQ(video::embedded_comment(with_xmp), xml_hostile);
  EXPECT_EQ(with_xmp.size() % 2, 0u);
  EXPECT_EQ(size_t(with_xmp[4] | with_xmp[5] << 8 | with_xmp[6] << 16), with_xmp.size() - 8);  // RIFF's size
  EXPECT_EQ(std::string(with_xmp.begin() + 12, with_xmp.begin() + 16), "VP8X");
  EXPECT_EQ(with_xmp[20], 0x04);                                           // XMP present
  EXPECT_EQ(with_xmp[24] | with_xmp[25] << 8, 639);                        // width - 1
  EXPECT_EQ(with_xmp[27] | with_xmp[28] << 8, 359);                        // height - 1
  EXPECT_TRUE(test::throws_with<InputError>([&] { video::webp_with_xmp(gif, text, 1, 1, "b.webp"); },
                                            {"b.webp", "not a WebP file"}));
  EXPECT_TRUE(test::throws_with<InputError>([&] { video::gif_with_comment(jpeg, text, "b.gif"); },
                                            {"b.gif", "not a GIF89a file"}));
  EXPECT_TRUE(test::throws_with<InputError>([&] { video::jpeg_with_comment(gif, text, "b.jpg"); },
                                            {"b.jpg", "not a JPEG file"}));
}

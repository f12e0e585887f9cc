// Pictures as image-to-video reads them (video/picture.h): decoded by FFmpeg to the bytes PIL decodes,
// converted from grey, palette and RGBA as PIL's convert("RGB"), resized as PIL's Image.resize to the bit
// (Lanczos and bicubic, shrinking, enlarging, one axis), and every bad file refused by name before any
// work. The pictures and PIL's results were made by tests/data/pictures/make_pictures.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "plan/error.h"
#include "support.h"
#include "video/picture.h"

using namespace studio;

namespace {

std::string data(const std::string& name) { return std::string(test::source_dir()) + "/tests/data/pictures/" + name; }

video::Picture read(const std::string& name) { return video::read_picture(data(name), "--image"); }

const std::string kSource = test::golden_case("wan21_i2v_tiny") + "/image.png";

TEST(Pictures, read_as_pil_reads_them) {
  const auto p = video::read_picture(kSource, "--image");
  EXPECT_EQ(p.width, 96);
  EXPECT_EQ(p.height, 64);
  for (const char* mode : {"L", "P", "RGBA"}) {
    const auto got = read(std::string("mode_") + mode + ".png"), want = read(std::string("mode_") + mode + "_as_rgb.png");
    EXPECT_EQ(got.rgb, want.rgb) << mode;
  }
  // An 8-bit TIFF with resolution tags (which FFmpeg's strict mode took for damage) reads as its PNG.
  EXPECT_EQ(read("tiff_40x27.tif").rgb, read("lanczos_40x27.png").rgb);
}

TEST(Pictures, jpeg_near_pil) {
  const auto got = read("jpeg_q95.jpg"), want = read("jpeg_q95_as_rgb.png");
  ASSERT_EQ(got.rgb.size(), want.rgb.size());
  double total = 0;
  int worst = 0;
  for (size_t i = 0; i < got.rgb.size(); ++i) {
    const int d = std::abs(int(got.rgb[i]) - int(want.rgb[i]));
    total += d, worst = std::max(worst, d);
  }
  std::printf("JPEG against PIL's decode: mean %.3f, max %d levels\n", total / double(got.rgb.size()), worst);
  // libjpeg upsamples the chroma with its own triangle filter, swscale with bicubic: the difference is at hard
  // colour edges (this picture's stripes and disc); 1.6 and 34 levels measured.
  EXPECT_LT(total / double(got.rgb.size()), 2.5);
  EXPECT_LE(worst, 48);
}

// A JPEG's EXIF orientation undone as diffusers' load_image undoes it (PIL's exif_transpose): each of the eight
// tags against PIL's upright picture, near as JPEG decoders are; a wrong turn is far (the picture is not symmetric).
TEST(Pictures, exif_orientation_as_pil) {
  for (int tag = 1; tag <= 8; ++tag) {
    const auto got = read("exif_" + std::to_string(tag) + ".jpg");
    const auto want = read("exif_" + std::to_string(tag) + "_as_rgb.png");
    ASSERT_EQ(got.width, want.width) << tag;
    ASSERT_EQ(got.height, want.height) << tag;
    double total = 0;
    for (size_t i = 0; i < got.rgb.size(); ++i) total += std::abs(int(got.rgb[i]) - int(want.rgb[i]));
    EXPECT_LT(total / double(got.rgb.size()), 2.5) << "orientation " << tag;
  }
}

class PilResize : public ::testing::TestWithParam<std::tuple<const char*, int, int, video::Resample>> {};

TEST_P(PilResize, equals_pil_to_the_bit) {
  const auto [name, w, h, filter] = GetParam();
  const auto got = video::resize(video::read_picture(kSource, "--image"), w, h, filter);
  const auto want = read(std::string(name) + ".png");
  ASSERT_EQ(got.width, want.width);
  ASSERT_EQ(got.height, want.height);
  size_t differ = 0;
  for (size_t i = 0; i < got.rgb.size(); ++i) differ += got.rgb[i] != want.rgb[i];
  EXPECT_EQ(differ, 0u) << name;
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, PilResize,
    ::testing::Values(std::tuple{"lanczos_40x27", 40, 27, video::Resample::Lanczos},
                      std::tuple{"lanczos_150x101", 150, 101, video::Resample::Lanczos},
                      std::tuple{"lanczos_96x50", 96, 50, video::Resample::Lanczos},
                      std::tuple{"bicubic_37x80", 37, 80, video::Resample::Bicubic},
                      std::tuple{"bicubic_336x224", 336, 224, video::Resample::Bicubic}),
    [](const auto& info) { return std::string(std::get<0>(info.param)); });

// Each file is refused with the flag, the file and a reason a user can act on.
class RefusedPicture : public ::testing::TestWithParam<std::pair<const char*, const char*>> {};

TEST_P(RefusedPicture, names_the_file_and_why) {
  const auto [name, why] = GetParam();
  const std::string path = data(name);
  try {
    video::read_picture(path, "--last_image");
    ADD_FAILURE() << name << " was read";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("--last_image " + path + ": ", 0), 0u) << m;
    EXPECT_NE(m.find(why), std::string::npos) << m;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Files, RefusedPicture,
    ::testing::Values(std::pair{"refused_16bit.png", "16 bits per channel"}, std::pair{"refused_cmyk.jpg", "CMYK"},
                      std::pair{"refused_animated.gif", "animated"}, std::pair{"refused_animated.webp", "animated"},
                      std::pair{"refused_truncated.png", "truncated"},
                      std::pair{"refused_damaged_pixels.png", "save it again, or use another copy"},
                      std::pair{"refused_not_a_picture.png", "not a picture"},
                      std::pair{"refused_9000_wide.png", "larger than 8192"}, std::pair{"missing.png", "no such file"}),
    [](const auto& info) {
      std::string n = info.param.first;
      std::replace(n.begin(), n.end(), '.', '_');
      return n;
    });

// Past about 268 million pixels FFmpeg calls a picture invalid data before it says its size: the PNG's and the
// JPEG's headers say it first. Only the headers are written: nothing reads further.
TEST(PictureSize, a_picture_too_large_for_ffmpeg_is_named_by_its_header) {
  test::TempDir tmp;
  const std::string png = tmp.path("huge.png"), jpg = tmp.path("huge.jpg");
  test::write_file(png, std::string("\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\x4e\x20\0\0\x4e\x20\x08\x02\0\0\0", 29) +
                            std::string(4, '\0'));
  // SOI, an APP0 segment of 16 bytes, a fill byte, then SOF0: 8 bits, 100 rows, 30000 columns, 3 components.
  test::write_file(jpg, std::string("\xff\xd8\xff\xe0\0\x10", 6) + std::string(14, '\0') +
                            std::string("\xff\xff\xc0\0\x11\x08\0\x64\x75\x30\x03", 11) + std::string(9, '\0'));
  for (const auto& [path, size] : {std::pair{png, "20000 x 20000 pixels"}, std::pair{jpg, "30000 x 100 pixels"}}) {
    try {
      video::read_picture(path, "--image");
      ADD_FAILURE() << path << " was read";
    } catch (const InputError& e) {
      EXPECT_TRUE(test::contains(e.what(), size) && test::contains(e.what(), "larger than 8192")) << e.what();
    }
  }
}

}  // namespace

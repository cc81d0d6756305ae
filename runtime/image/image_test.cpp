// fm_image against PIL on real files (the cases make_pil_cases.py writes,
// named by $FM_IMAGE_CASES/cases.txt): decoded pixels, resized pixels and
// the normalized tensor must equal PIL's; broken and unsupported files must
// fail with an error that names the file and says what is wrong.
//
// Why exact equality: the decoded pixels come from the same libjpeg/zlib
// data PIL reads, the resize is PIL's integer arithmetic step by step, and
// the tensor is the reference's float64 formula rounded once to float32, so
// nothing is left to round differently. A tolerance would only hide an
// off-by-one in a filter tap or a rounding step (a one-level pixel error
// moves the tensor by 1/255/std ~ 0.015).
#include "fm/image.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace fm::image {
namespace {

std::string casesDir() {
  const char *dir = std::getenv("FM_IMAGE_CASES");
  return dir ? dir : "";
}

std::vector<uint8_t> readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
}

std::vector<std::vector<std::string>> cases(const std::string &kind) {
  std::vector<std::vector<std::string>> out;
  std::ifstream in(casesDir() + "/cases.txt");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string s; words >> s;)
      w.push_back(s);
    if (!w.empty() && w[0] == kind)
      out.push_back(w);
  }
  return out;
}

/// Index of the first differing byte, or -1.
int64_t firstDifference(const std::vector<uint8_t> &a,
                        const std::vector<uint8_t> &b) {
  if (a.size() != b.size())
    return 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i])
      return int64_t(i);
  return -1;
}

class PilCases : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(casesDir().empty())
        << "FM_IMAGE_CASES is not set: run through ctest (runtime.image needs "
           "the runtime.image.pil_cases set-up)";
  }
};

TEST_F(PilCases, DecodeResizeAndTensorEqualPil) {
  const auto all = cases("ok");
  ASSERT_GE(all.size(), 20u) << "cases.txt incomplete in " << casesDir();
  for (const auto &c : all) {
    SCOPED_TRACE(c[1] + " (" + c[2] + ")");
    const std::string path = casesDir() + "/" + c[2];
    Preprocess p;
    p.size = std::stoll(c[3]);
    Expected<Resample> r = parseResample(c[4]);
    ASSERT_TRUE(r.isOk()) << r.message();
    p.resample = *r;
    for (int i = 0; i < 3; ++i) {
      p.mean[i] = std::stod(c[5 + i]);
      p.std[i] = std::stod(c[8 + i]);
    }
    Expected<RgbImage> image = readImageFile(path);
    ASSERT_TRUE(image.isOk()) << image.message();
    EXPECT_EQ(image->width, std::stoll(c[11]));
    EXPECT_EQ(image->height, std::stoll(c[12]));
    const auto decoded = readBytes(casesDir() + "/" + c[1] + ".decoded.rgb");
    int64_t at = firstDifference(image->pixels, decoded);
    ASSERT_EQ(at, -1) << "decoded pixels differ from PIL's at byte " << at
                      << " (pixel " << at / 3 << ")";

    Expected<RgbImage> sized = resize(*image, p.size, p.size, p.resample);
    ASSERT_TRUE(sized.isOk()) << sized.message();
    const auto resized = readBytes(casesDir() + "/" + c[1] + ".resized.rgb");
    at = firstDifference(sized->pixels, resized);
    ASSERT_EQ(at, -1) << "resized pixels differ from PIL's at byte " << at;

    Expected<std::vector<float>> tensor = preprocessImageFile(path, p);
    ASSERT_TRUE(tensor.isOk()) << tensor.message();
    const auto bytes = readBytes(casesDir() + "/" + c[1] + ".tensor.f32");
    ASSERT_EQ(bytes.size(), tensor->size() * sizeof(float));
    std::vector<float> want(tensor->size());
    std::memcpy(want.data(), bytes.data(), bytes.size());
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_EQ((*tensor)[i], want[i]) << "tensor element " << i;
  }
}

TEST_F(PilCases, ResizeSweepEqualsPil) {
  const auto all = cases("resize");
  ASSERT_GE(all.size(), 10u);
  for (const auto &c : all) {
    SCOPED_TRACE(c[1]);
    Expected<RgbImage> image = readImageFile(casesDir() + "/" + c[2]);
    ASSERT_TRUE(image.isOk()) << image.message();
    Expected<Resample> r = parseResample(c[5]);
    ASSERT_TRUE(r.isOk());
    Expected<RgbImage> sized =
        resize(*image, std::stoll(c[3]), std::stoll(c[4]), *r);
    ASSERT_TRUE(sized.isOk()) << sized.message();
    const int64_t at = firstDifference(
        sized->pixels, readBytes(casesDir() + "/" + c[1] + ".resized.rgb"));
    EXPECT_EQ(at, -1) << "differs from PIL at byte " << at;
  }
}

TEST_F(PilCases, BrokenAndUnsupportedFilesGiveNamedErrors) {
  const auto all = cases("error");
  ASSERT_GE(all.size(), 10u);
  for (const auto &c : all) {
    SCOPED_TRACE(c[1]);
    std::string words;
    for (size_t i = 3; i < c.size(); ++i)
      words += (i > 3 ? " " : "") + c[i];
    const std::string path = casesDir() + "/" + c[2];
    Expected<RgbImage> image = readImageFile(path);
    ASSERT_FALSE(image.isOk()) << "decoded " << image->width << " x "
                               << image->height;
    EXPECT_EQ(image.message().rfind(path + ": ", 0), 0u) << image.message();
    EXPECT_NE(image.message().find(words), std::string::npos) << image.message();
    // The same through the preprocessing entry point.
    Preprocess p;
    p.size = 8;
    Expected<std::vector<float>> t = preprocessImageFile(path, p);
    ASSERT_FALSE(t.isOk());
    EXPECT_NE(t.message().find(words), std::string::npos) << t.message();
  }
}

TEST_F(PilCases, PixelLimitIsConfigurable) {
  const std::string path = casesDir() + "/big_down.png"; // 300 x 200
  DecodeLimits limits;
  limits.maxPixels = 300 * 200 - 1;
  Expected<RgbImage> image = readImageFile(path, limits);
  ASSERT_FALSE(image.isOk());
  EXPECT_NE(image.message().find("300 x 200 pixels is over the limit of 59999"),
            std::string::npos)
      << image.message();
  limits.maxPixels = 300 * 200;
  EXPECT_TRUE(readImageFile(path, limits).isOk());
}

TEST(Image, ArgumentErrors) {
  EXPECT_FALSE(parseResample("lanczos").isOk());
  EXPECT_NE(parseResample("lanczos").message().find("bicubic or bilinear"),
            std::string::npos);
  EXPECT_STREQ(resampleName(Resample::Bicubic), "bicubic");
  EXPECT_STREQ(resampleName(Resample::Bilinear), "bilinear");
  RgbImage one;
  one.width = one.height = 1;
  one.pixels = {1, 2, 3};
  EXPECT_FALSE(resize(one, 0, 4, Resample::Bicubic).isOk());
  RgbImage broken = one;
  broken.pixels.pop_back();
  EXPECT_FALSE(resize(broken, 2, 2, Resample::Bicubic).isOk());
  // A constant image stays constant through both filters, up or down.
  RgbImage flat;
  flat.width = 9;
  flat.height = 5;
  flat.pixels.assign(9 * 5 * 3, 77);
  for (Resample f : {Resample::Bicubic, Resample::Bilinear})
    for (auto [w, h] : {std::pair<int64_t, int64_t>{3, 2}, {20, 11}}) {
      auto r = resize(flat, w, h, f);
      ASSERT_TRUE(r.isOk());
      for (uint8_t v : r->pixels)
        ASSERT_EQ(v, 77);
    }
  Preprocess p;
  p.size = 4;
  p.std[1] = 0.0;
  EXPECT_NE(preprocessImageFile("x.png", p).message().find("image_std[1] is 0"),
            std::string::npos);
}

TEST(Image, ToTensorIsChannelsFirstAndNormalized) {
  RgbImage im;
  im.width = 2;
  im.height = 1;
  im.pixels = {0, 51, 255, 102, 204, 153};
  Preprocess p;
  p.mean[0] = 0.5;
  p.std[2] = 0.25;
  const std::vector<float> t = toTensor(im, p);
  ASSERT_EQ(t.size(), 6u);
  EXPECT_EQ(t[0], float((0 / 255.0 - 0.5) / 1.0));   // R of pixel 0
  EXPECT_EQ(t[1], float((102 / 255.0 - 0.5) / 1.0)); // R of pixel 1
  EXPECT_EQ(t[2], float(51 / 255.0));                // G plane
  EXPECT_EQ(t[5], float((153 / 255.0) / 0.25));      // B of pixel 1
}

} // namespace
} // namespace fm::image

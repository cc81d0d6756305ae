// Checks the NPY writer byte by byte.
#include "fm/npy.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace fm {
namespace {

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string tempPath(const char *name) {
  const char *dir = std::getenv("TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/fm_npy_test_" + name + ".npy";
}

// Returns the header dict; checks the preamble and padding.
std::string checkHeader(const std::string &bytes) {
  EXPECT_GE(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  size_t length = static_cast<unsigned char>(bytes[8]) |
                  static_cast<unsigned char>(bytes[9]) << 8;
  EXPECT_EQ((10 + length) % 64, 0u);
  EXPECT_EQ(bytes[10 + length - 1], '\n');
  return bytes.substr(10, length);
}

TEST(Npy, WritesMatrix) {
  std::vector<float> data = {1.0f, -2.5f, 3.0f, 0.0f, 1e-3f, 7.0f};
  std::string path = tempPath("matrix"), error;
  ASSERT_TRUE(writeNpyF32(path, data.data(), {2, 3}, &error)) << error;
  std::string bytes = readFile(path);
  std::string header = checkHeader(bytes);
  EXPECT_EQ(header.find("{'descr': '<f4', 'fortran_order': False, "
                        "'shape': (2, 3), }"),
            0u)
      << header;
  size_t offset = 10 + header.size();
  ASSERT_EQ(bytes.size(), offset + data.size() * 4);
  EXPECT_EQ(std::memcmp(bytes.data() + offset, data.data(), data.size() * 4),
            0);
  std::remove(path.c_str());
}

TEST(Npy, WritesVectorAndScalarShapes) {
  float data[5] = {1, 2, 3, 4, 5};
  std::string path = tempPath("vector");
  ASSERT_TRUE(writeNpyF32(path, data, {5}, nullptr));
  EXPECT_NE(checkHeader(readFile(path)).find("'shape': (5,), }"),
            std::string::npos);
  ASSERT_TRUE(writeNpyF32(path, data, {}, nullptr));
  std::string bytes = readFile(path);
  std::string header = checkHeader(bytes);
  EXPECT_NE(header.find("'shape': (), }"), std::string::npos);
  EXPECT_EQ(bytes.size(), 10 + header.size() + 4);
  ASSERT_TRUE(writeNpyF32(path, nullptr, {0, 4}, nullptr));
  EXPECT_NE(checkHeader(readFile(path)).find("'shape': (0, 4), }"),
            std::string::npos);
  std::remove(path.c_str());
}

TEST(Npy, ReportsErrors) {
  float x = 0;
  std::string error;
  EXPECT_FALSE(writeNpyF32("/nonexistent-dir/x.npy", &x, {1}, &error));
  EXPECT_NE(error.find("/nonexistent-dir/x.npy"), std::string::npos) << error;
  EXPECT_FALSE(writeNpyF32(tempPath("bad"), &x, {-1}, &error));
  EXPECT_NE(error.find("negative"), std::string::npos) << error;
}

} // namespace
} // namespace fm

// fm::Status and fm::Expected.
#include "fm/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace {

fm::Expected<int> half(int x) {
  if (x % 2)
    return fm::Status::error(std::to_string(x) + " is odd");
  return x / 2;
}

fm::Status chain(int x) {
  FM_RETURN_IF_ERROR(half(x).status());
  return fm::Status::ok();
}

TEST(Status, OkAndError) {
  fm::Status ok;
  EXPECT_TRUE(ok.isOk());
  EXPECT_TRUE(static_cast<bool>(ok));
  EXPECT_EQ(ok.message(), "");
  fm::Status bad = fm::Status::error("model.fmb: broken");
  EXPECT_FALSE(bad.isOk());
  EXPECT_EQ(bad.message(), "model.fmb: broken");
}

TEST(Status, Expected) {
  auto a = half(4);
  ASSERT_TRUE(a.isOk());
  EXPECT_EQ(*a, 2);
  auto b = half(3);
  ASSERT_FALSE(b.isOk());
  EXPECT_EQ(b.message(), "3 is odd");
  EXPECT_EQ(chain(5).message(), "5 is odd");
  EXPECT_TRUE(chain(6).isOk());
  // Move-only values.
  fm::Expected<std::unique_ptr<int>> p(std::make_unique<int>(7));
  fm::Expected<std::unique_ptr<int>> q = std::move(p);
  ASSERT_TRUE(q.isOk());
  EXPECT_EQ(**q, 7);
  std::unique_ptr<int> taken = std::move(*q);
  EXPECT_EQ(*taken, 7);
  // Copy and assignment.
  fm::Expected<std::string> s(std::string("x"));
  fm::Expected<std::string> t = s;
  t = fm::Expected<std::string>(fm::Status::error("gone"));
  EXPECT_EQ(*s, "x");
  EXPECT_EQ(t.message(), "gone");
  // An ok Status is not an error value.
  fm::Expected<int> weird{fm::Status::ok()};
  EXPECT_FALSE(weird.isOk());
}

} // namespace

// What the GPU devices' kernel tests share (test/unit/vulkan,
// test/unit/cuda): one description applied to a GPU device and to the CPU
// device, each a Side with the test's weights imported and its activation
// buffers; the weights as an artifact's data section (Blob); random inputs;
// the comparison of two outputs.
#pragma once

#include "hal/Device.h"
#include "kernels/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace fm::hal::gputest {

using kernels::QuantFormat;
using kernels::QuantGrid;

/// Rows of `b`: `stride` floats apart, `width` wide, from float
/// `offsetFloats`.
inline Rows rowsOf(Buffer *b, int64_t stride, int64_t width, uint64_t offsetFloats = 0) {
  return Rows{b, offsetFloats * 4, stride, width};
}

/// One device with the test's weights imported and its activation buffers.
struct Side {
  std::unique_ptr<Device> device;
  std::unique_ptr<Buffer> weights;
  std::vector<std::unique_ptr<Buffer>> buffers;

  Buffer *buffer(const std::vector<float> &init) {
    auto b = device->allocate(init.size() * 4, MemorySpace::Device);
    EXPECT_TRUE(b.isOk()) << b.message();
    EXPECT_TRUE(device->upload(**b, 0, init.data(), init.size() * 4).isOk());
    buffers.push_back(std::move(*b));
    return buffers.back().get();
  }
  Buffer *bytes(const std::vector<uint8_t> &init) {
    auto b = device->allocate(init.size(), MemorySpace::Device);
    EXPECT_TRUE(b.isOk()) << b.message();
    EXPECT_TRUE(device->upload(**b, 0, init.data(), init.size()).isOk());
    buffers.push_back(std::move(*b));
    return buffers.back().get();
  }
  std::vector<float> read(const Buffer *b) {
    std::vector<float> out(b->size() / 4);
    EXPECT_TRUE(device->download(*b, 0, out.data(), b->size()).isOk());
    return out;
  }
};

/// The weights of a test, packed back to back at 64-byte offsets as in an
/// artifact's data section.
struct Blob {
  std::vector<uint8_t> bytes;
  struct Entry {
    uint64_t offset, size;
    WeightKind kind;
    QuantFormat format;
    std::vector<int64_t> shape;
  };
  std::vector<Entry> entries;

  size_t add(const std::vector<float> &w, std::vector<int64_t> shape, WeightKind kind,
             QuantFormat f = {8, 32, QuantGrid::Balanced}) {
    const int64_t K = shape.back(), N = int64_t(w.size()) / K;
    std::vector<uint8_t> data;
    switch (kind) {
    case WeightKind::F32:
      data.resize(w.size() * 4);
      std::memcpy(data.data(), w.data(), data.size());
      break;
    case WeightKind::F16:
      data.resize(w.size() * 2);
      for (size_t i = 0; i < w.size(); ++i) {
        const uint16_t h = kernels::floatToHalf(w[i]);
        std::memcpy(data.data() + 2 * i, &h, 2);
      }
      break;
    case WeightKind::Quant:
      data.resize(size_t(N) * kernels::packedRowBytes(f, K));
      kernels::quantizeRows(w.data(), N, K, f, data.data());
      break;
    }
    const uint64_t offset = (bytes.size() + 63) & ~uint64_t(63);
    bytes.resize(offset + data.size());
    std::memcpy(bytes.data() + offset, data.data(), data.size());
    entries.push_back({offset, data.size(), kind, f, std::move(shape)});
    return entries.size() - 1;
  }
  WeightDesc desc(const Side &s, size_t i) const {
    WeightDesc d;
    d.buffer = s.weights.get();
    d.offset = entries[i].offset;
    d.bytes = entries[i].size;
    d.kind = entries[i].kind;
    d.format = entries[i].format;
    d.shape = entries[i].shape;
    d.name = "w" + std::to_string(i);
    return d;
  }
};

inline std::vector<float> randomFloats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float &x : v)
    x = u(rng);
  return v;
}

/// max |a - b| <= tol * max |b| (and no NaN anywhere: a NaN fails).
inline void expectClose(const std::vector<float> &got, const std::vector<float> &want,
                 double tol, const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double maxRef = 0.0, maxErr = 0.0;
  size_t worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_FALSE(std::isnan(got[i])) << what << ": NaN at " << i;
    ASSERT_FALSE(std::isnan(want[i])) << what << ": reference NaN at " << i;
    maxRef = std::max(maxRef, std::fabs(double(want[i])));
    const double e = std::fabs(double(got[i]) - double(want[i]));
    if (e > maxErr) {
      maxErr = e;
      worst = i;
    }
  }
  EXPECT_LE(maxErr, tol * std::max(maxRef, 1e-30))
      << what << ": worst at " << worst << ": " << got[worst] << " vs " << want[worst]
      << " (max |ref| " << maxRef << ")";
}

} // namespace fm::hal::gputest

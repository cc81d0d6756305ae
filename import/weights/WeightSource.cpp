// WeightSource helpers: checkpoint dtypes, shapes, and reading a tensor as f32.
#include "import/weights/WeightSource.h"

#include <cstring>

namespace fm::import {

const char *dtypeName(DType d) {
  switch (d) {
  case DType::F32:
    return "F32";
  case DType::F16:
    return "F16";
  case DType::BF16:
    return "BF16";
  }
  return "?";
}

unsigned dtypeSize(DType d) {
  switch (d) {
  case DType::F32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  }
  return 0;
}

uint64_t TensorInfo::numElements() const {
  uint64_t n = 1;
  for (int64_t d : shape)
    n *= uint64_t(d); // validated at load time not to overflow
  return n;
}

std::string formatShape(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

namespace {

float bf16ToF32(uint16_t v) {
  const uint32_t bits = uint32_t(v) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float f16ToF32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else { // subnormal
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ff;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000 | (mant << 13);
  } else {
    bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

} // namespace

void readF32(const WeightSource &source, const TensorInfo &t,
             std::vector<float> &out) {
  llvm::ArrayRef<uint8_t> raw = source.data(t);
  const uint64_t n = t.numElements();
  out.resize(n);
  switch (t.dtype) {
  case DType::F32:
    std::memcpy(out.data(), raw.data(), 4 * n);
    return;
  case DType::F16:
    for (uint64_t e = 0; e < n; ++e) {
      uint16_t h;
      std::memcpy(&h, raw.data() + 2 * e, 2);
      out[e] = f16ToF32(h);
    }
    return;
  case DType::BF16:
    for (uint64_t e = 0; e < n; ++e) {
      uint16_t h;
      std::memcpy(&h, raw.data() + 2 * e, 2);
      out[e] = bf16ToF32(h);
    }
    return;
  }
}

} // namespace fm::import

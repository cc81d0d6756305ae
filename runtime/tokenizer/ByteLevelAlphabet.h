// GPT-2's byte-to-unicode alphabet (bytes_to_unicode in openai/gpt-2
// encoder.py): the printable characters a byte-level vocabulary is written in.
#pragma once

#include <array>
#include <cstdint>

namespace fm::tok {

struct ByteLevelAlphabet {
  std::array<uint32_t, 256> charOf; // byte -> code point
  std::array<int16_t, 0x144> byteOf; // code point -> byte, -1 when none

  ByteLevelAlphabet() {
    byteOf.fill(-1);
    auto printable = [](int b) {
      return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
             (b >= 0xAE && b <= 0xFF);
    };
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      charOf[b] = printable(b) ? static_cast<uint32_t>(b) : next++;
      byteOf[charOf[b]] = static_cast<int16_t>(b);
    }
  }
  /// The byte that code point `c` stands for, or -1.
  int byteFor(uint32_t c) const { return c < byteOf.size() ? byteOf[c] : -1; }

  static const ByteLevelAlphabet &get() {
    static const ByteLevelAlphabet alphabet;
    return alphabet;
  }
};

} // namespace fm::tok

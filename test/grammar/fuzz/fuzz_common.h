// Shared by the grammar fuzz targets: runs a compiled grammar over bytes and a tiny vocabulary,
// so what the parsers accept also exercises the matcher and the mask cache.
#pragma once

#include "fm/grammar.h"

#include <string>
#include <vector>

inline void exercise(const fm::Grammar &g, const std::string &input) {
  fm::GrammarMatcher bytes(g);
  bytes.acceptBytes(input);
  (void)bytes.isAccepting();
  (void)bytes.describeExpected();
  (void)bytes.forcedBytes(64);
  fm::Vocabulary vocab;
  vocab.tokens = {"", "{", "}", "\"", "a", "ab", "1", ",", ":", "[", "]", "\xC3", "\xA9", " ", "-", "."};
  vocab.eos = {0};
  auto masker = fm::TokenMasker::create(g, vocab);
  if (!masker)
    return;
  fm::GrammarMatcher m(*masker);
  std::vector<uint32_t> mask(masker->maskWords());
  for (size_t step = 0; step < 8; ++step) {
    fm::MaskInfo info = m.fillMask(mask.data());
    int32_t pick = -1;
    for (int32_t t = 0; t < masker->vocabSize(); ++t)
      if ((mask[size_t(t) >> 5] >> (t & 31)) & 1 && (pick < 0 || (t + step) % 3 == 0))
        pick = t;
    if (pick < 0 || info.allowed == 0)
      break;
    if (!m.acceptToken(pick)) {
      if (!m.isTooAmbiguous()) // the one documented reason for a masked token to be refused
        __builtin_trap();      // the mask allowed a token the matcher refuses
      break;
    }
    if (m.isFinished())
      break;
  }
}

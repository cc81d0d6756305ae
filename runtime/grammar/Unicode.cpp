// Code-point sets and their UTF-8 / digit-wise spellings.
#include "grammar/Unicode.h"

#include <algorithm>

namespace fm::grammar {

namespace {
constexpr uint32_t kSurrogateLo = 0xD800, kSurrogateHi = 0xDFFF;
} // namespace

CpSet CpSet::range(uint32_t lo, uint32_t hi) {
  CpSet s;
  s.add(lo, hi);
  return s;
}

void CpSet::add(uint32_t lo, uint32_t hi) {
  hi = std::min(hi, kMaxCodePoint);
  if (lo > hi)
    return;
  // Surrogates are cut out here, once, so no set anywhere spells them.
  if (lo < kSurrogateLo && hi > kSurrogateHi) {
    ranges_.push_back({lo, kSurrogateLo - 1});
    ranges_.push_back({kSurrogateHi + 1, hi});
  } else if (lo >= kSurrogateLo && hi <= kSurrogateHi) {
    return;
  } else if (lo >= kSurrogateLo && lo <= kSurrogateHi) {
    ranges_.push_back({kSurrogateHi + 1, hi});
  } else if (hi >= kSurrogateLo && hi <= kSurrogateHi) {
    ranges_.push_back({lo, kSurrogateLo - 1});
  } else {
    ranges_.push_back({lo, hi});
  }
  normalize();
}

void CpSet::add(const CpSet &other) {
  ranges_.insert(ranges_.end(), other.ranges_.begin(), other.ranges_.end());
  normalize();
}

void CpSet::normalize() {
  std::sort(ranges_.begin(), ranges_.end());
  std::vector<Range> merged;
  for (const Range &r : ranges_) {
    if (!merged.empty() && r.first <= merged.back().second + 1)
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  }
  ranges_ = std::move(merged);
}

CpSet CpSet::complement() const {
  CpSet out;
  uint32_t next = 0;
  for (const Range &r : ranges_) {
    if (r.first > next)
      out.ranges_.push_back({next, r.first - 1});
    next = r.second + 1;
  }
  if (next <= kMaxCodePoint)
    out.ranges_.push_back({next, kMaxCodePoint});
  // Re-add through add() so the surrogate gap is cut.
  CpSet clean;
  for (const Range &r : out.ranges_)
    clean.add(r.first, r.second);
  return clean;
}

CpSet CpSet::intersect(const CpSet &other) const {
  CpSet out;
  size_t i = 0, j = 0;
  while (i < ranges_.size() && j < other.ranges_.size()) {
    uint32_t lo = std::max(ranges_[i].first, other.ranges_[j].first);
    uint32_t hi = std::min(ranges_[i].second, other.ranges_[j].second);
    if (lo <= hi)
      out.ranges_.push_back({lo, hi});
    if (ranges_[i].second < other.ranges_[j].second)
      ++i;
    else
      ++j;
  }
  return out;
}

bool CpSet::contains(uint32_t cp) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), Range{cp, UINT32_MAX});
  if (it == ranges_.begin())
    return false;
  --it;
  return cp >= it->first && cp <= it->second;
}

namespace {

int utf8Length(uint32_t cp) {
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

void encode(uint32_t cp, uint8_t *out) {
  switch (utf8Length(cp)) {
  case 1:
    out[0] = uint8_t(cp);
    break;
  case 2:
    out[0] = uint8_t(0xC0 | (cp >> 6));
    out[1] = uint8_t(0x80 | (cp & 0x3F));
    break;
  case 3:
    out[0] = uint8_t(0xE0 | (cp >> 12));
    out[1] = uint8_t(0x80 | ((cp >> 6) & 0x3F));
    out[2] = uint8_t(0x80 | (cp & 0x3F));
    break;
  default:
    out[0] = uint8_t(0xF0 | (cp >> 18));
    out[1] = uint8_t(0x80 | ((cp >> 12) & 0x3F));
    out[2] = uint8_t(0x80 | ((cp >> 6) & 0x3F));
    out[3] = uint8_t(0x80 | (cp & 0x3F));
  }
}

} // namespace

std::vector<ByteRangeSeq> utf8Sequences(const CpSet &set) {
  std::vector<ByteRangeSeq> out;
  std::vector<std::pair<uint32_t, uint32_t>> todo;
  for (auto it = set.ranges().rbegin(); it != set.ranges().rend(); ++it)
    todo.push_back(*it);
  while (!todo.empty()) {
    auto [lo, hi] = todo.back();
    todo.pop_back();
    // Split where the encoded length changes.
    bool split = false;
    for (uint32_t edge : {0x7Fu, 0x7FFu, 0xFFFFu}) {
      if (lo <= edge && hi > edge) {
        todo.push_back({edge + 1, hi});
        todo.push_back({lo, edge});
        split = true;
        break;
      }
    }
    if (split)
      continue;
    if (hi <= 0x7F) {
      out.push_back({{uint8_t(lo), uint8_t(hi)}});
      continue;
    }
    // Split until every continuation position below the first differing one is full.
    for (int i = 1; i < 4 && !split; ++i) {
      uint32_t m = (1u << (6 * i)) - 1;
      if ((lo & ~m) != (hi & ~m)) {
        if ((lo & m) != 0) {
          todo.push_back({(lo | m) + 1, hi});
          todo.push_back({lo, lo | m});
          split = true;
        } else if ((hi & m) != m) {
          todo.push_back({hi & ~m, hi});
          todo.push_back({lo, (hi & ~m) - 1});
          split = true;
        }
      }
    }
    if (split)
      continue;
    uint8_t a[4], b[4];
    encode(lo, a);
    encode(hi, b);
    ByteRangeSeq seq;
    for (int k = 0; k < utf8Length(lo); ++k)
      seq.push_back({a[k], b[k]});
    out.push_back(std::move(seq));
  }
  return out;
}

std::vector<std::vector<std::pair<uint32_t, uint32_t>>>
digitRanges(uint32_t lo, uint32_t hi, uint32_t base, int digits) {
  using Seq = std::vector<std::pair<uint32_t, uint32_t>>;
  std::vector<Seq> out;
  if (lo > hi)
    return out;
  if (digits == 0) {
    out.push_back({});
    return out;
  }
  uint32_t p = 1;
  for (int i = 1; i < digits; ++i)
    p *= base;
  uint32_t dlo = lo / p, dhi = hi / p;
  auto prefixed = [&](uint32_t a, uint32_t b, const std::vector<Seq> &rest) {
    for (const Seq &r : rest) {
      Seq s{{a, b}};
      s.insert(s.end(), r.begin(), r.end());
      out.push_back(std::move(s));
    }
  };
  if (dlo == dhi) {
    prefixed(dlo, dlo, digitRanges(lo % p, hi % p, base, digits - 1));
    return out;
  }
  if (lo % p != 0) {
    prefixed(dlo, dlo, digitRanges(lo % p, p - 1, base, digits - 1));
    ++dlo;
  }
  bool highPartial = hi % p != p - 1;
  uint32_t fullHi = highPartial ? dhi - 1 : dhi;
  if (dlo <= fullHi)
    prefixed(dlo, fullHi, digitRanges(0, p - 1, base, digits - 1));
  if (highPartial)
    prefixed(dhi, dhi, digitRanges(0, hi % p, base, digits - 1));
  return out;
}

void appendUtf8(std::string &out, uint32_t cp) {
  uint8_t b[4];
  encode(cp, b);
  out.append(reinterpret_cast<const char *>(b), utf8Length(cp));
}

bool decodeUtf8(const std::string &text, size_t *i, uint32_t *cp) {
  size_t n = text.size(), k = *i;
  if (k >= n)
    return false;
  uint8_t c = uint8_t(text[k]);
  int len;
  uint32_t v, min;
  if (c < 0x80) {
    *cp = c;
    *i = k + 1;
    return true;
  } else if ((c & 0xE0) == 0xC0) {
    len = 2, v = c & 0x1F, min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3, v = c & 0x0F, min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    len = 4, v = c & 0x07, min = 0x10000;
  } else {
    return false;
  }
  if (k + len > n)
    return false;
  for (int j = 1; j < len; ++j) {
    uint8_t d = uint8_t(text[k + j]);
    if ((d & 0xC0) != 0x80)
      return false;
    v = (v << 6) | (d & 0x3F);
  }
  if (v < min || v > kMaxCodePoint || (v >= 0xD800 && v <= 0xDFFF))
    return false;
  *cp = v;
  *i = k + len;
  return true;
}

} // namespace fm::grammar

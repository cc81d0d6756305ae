// AMX-INT8 qgemm (built with -mamx-tile -mamx-int8 and AVX-512): per input
// block of U = min(group, 64) the two panels of a work unit are unpacked
// into B tiles (U/4 tile rows x 16 outputs x 4 inputs), and each pair of
// 16-row A tiles of prepared x runs 4 tdpbsud (s8 x u8 -> int32) into 4 C
// tiles (32 rows x 32 outputs). The C tiles go through memory into the
// AVX-512 epilogue (qgemm_x86.h), which for the previous pair runs while
// the tile unit computes the next one.
//
// Linux hands out the tile state only on request: amxUsable() asks once,
// per process, with arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA).
//
// Measured on this machine's Xeon (family 6 model 207), which bounds the
// design: a tdpbsud costs ~14 ns whether K is 64 or 32 (so group 32 uses
// half the tile unit); 512-bit vector ops do not overlap with running tile
// products, 256-bit ones do but fold 16 outputs in ~2.3 ns against ~1 ns
// in zmm; the zmm fold of one block's 16 x 16 C tile costs about as much as
// the tile product itself. So the per-block epilogue (the group scales and
// x's block scales) sets the speed, not the tile unit: ~45-60% of oneDNN's
// single-scale s8s8s32 matmul for int8 x (fm-gemm-yardstick). Balanced
// weights at 2 or 4 bits in 32-input x blocks (group 32; int11's blocks at
// any group) take rangeG32 instead: signed quants and accumulators held in
// registers. Its gain, as w4 g32 / w2 g64 in one fm-gemm-yardstick run at
// 2 threads (M 64): 0.49-0.50 -> 0.61-0.83 for int8x2 x, 0.44-0.52 -> 0.89-0.94 for int8 x
// (docs/benchmarks.md, "CPU table"); the fraction of oneDNN above is the other paths'.
#include "kernels/qgemm_prepare.h"
#include "kernels/qgemm_x86.h"

#include <cpuid.h>
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 intrinsics trip -Wuninitialized inside the header (see
// simd_avx512.h): silenced around the include.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#else
#include <immintrin.h>
#endif

#include <cstring>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace fm::kernels::gdetail {
namespace {

struct Tag {};
using K = X86<Tag>;

// The palette-1 tile configuration (Intel SDM, LDTILECFG).
struct alignas(64) TileConfig {
  uint8_t palette;
  uint8_t startRow;
  uint8_t reserved[14];
  uint16_t colsBytes[16];
  uint8_t rows[16];
};
static_assert(sizeof(TileConfig) == 64, "LDTILECFG reads 64 bytes");

// Tiles 0-3: C (16 prepared rows x 16 int32), 4-5: A (16 prepared rows x U
// bytes), 6-7: B (U / 4 tile rows x 64 bytes). The pair-tile layout takes
// K = 64 tiles (both digits of a 32-input unit).
void setup(const Params &p) {
  TileConfig c{};
  c.palette = 1;
  const int U = p.act.pairTile ? 64 : p.act.unit;
  for (int t = 0; t < 4; ++t) {
    c.rows[t] = 16;
    c.colsBytes[t] = 64;
  }
  for (int t = 4; t < 6; ++t) {
    c.rows[t] = 16;
    c.colsBytes[t] = static_cast<uint16_t>(U);
  }
  for (int t = 6; t < 8; ++t) {
    c.rows[t] = static_cast<uint8_t>(U / 4);
    c.colsBytes[t] = 64;
  }
  // GCC 12's _tile_loadconfig is an asm whose memory operand covers only 8
  // bytes of the configuration, so without this barrier GCC drops the other
  // stores as dead and tileloadd then faults (#UD, unconfigured tiles).
  __asm__ volatile("" : : "r"(&c) : "memory");
  _tile_loadconfig(&c);
}

void teardown() { _tile_release(); }

// C tiles of one pair of A tiles: [tile][16 rows][16 int32].
using CTiles = int32_t[4][16 * 16];

// Folds the stored C tiles of the pair at prepared rows [16 tp, 16 tp +
// 16 * tiles) of the unit into acc, walking the tiles row by row (x row i
// of A tile t is prepared row D * i; its C rows are i * D .. i * D + D - 1).
template <int D>
FM_GEMM_INLINE void epilogue(const Params &p, const CTiles &c, int64_t tp,
                             int tiles, int64_t m0, int64_t m1, int panels,
                             int64_t u, int64_t g, bool groupEnd,
                             const __m512 (&s)[2], const __m512 (&mo)[2],
                             float *acc) {
  const Act &a = p.act;
  for (int t = 0; t < tiles; ++t) {
    const int64_t first = m0 + 16 * (tp + t) / D;
    int64_t count = 16 / D;
    if (first + count > m1)
      count = m1 - first;
    const float *dx = a.dx + first * a.ldd + u;
    const float *xs = a.xs + first * a.lds + g;
    float *out = acc + (first - m0) * 32;
    const int32_t *c0 = c[2 * t], *c1 = c[2 * t + 1];
    for (int64_t i = 0; i < count; ++i, out += 32, c0 += 16 * D,
                 c1 += 16 * D) {
      const float d = dx[i * a.ldd], x = groupEnd ? xs[i * a.lds] : 0.0f;
      const __m512i d0[2] = {_mm512_load_si512(c0),
                             _mm512_load_si512(c0 + 16 * (D - 1))};
      K::fold(out, K::combine<D>(d0, a.hiShift), d, s[0], groupEnd, mo[0], x);
      if (panels == 2) {
        const __m512i d1[2] = {_mm512_load_si512(c1),
                               _mm512_load_si512(c1 + 16 * (D - 1))};
        K::fold(out + 16, K::combine<D>(d1, a.hiShift), d, s[1], groupEnd, mo[1], x);
      }
    }
  }
}

template <int D, int Bits>
void rangeBits(const Params &p, int64_t m0, int64_t m1, int64_t p0,
               int64_t p1) {
  const QuantFormat f = p.f;
  const Act &a = p.act;
  const int U = a.unit;
  const int halves = kPanelBlockInputs / U, tilesPerHalf = U / 4;
  const int64_t rows = m1 - m0;
  // 16-row A tiles of the unit (rows past it are computed and dropped).
  const int64_t tiles = (rows * D + 15) / 16;
  alignas(64) uint8_t bb[2][kTileRows * 64];
  alignas(64) CTiles cbuf[2];
  alignas(64) float acc[kMaxUnitRows * 32];
  for (int64_t pi = p0; pi < p1; pi += 2) {
    const int panels = p1 - pi >= 2 ? 2 : 1;
    const uint8_t *panel[2] = {p.w + pi * p.geo.panelBytes,
                               p.w + (pi + panels - 1) * p.geo.panelBytes};
    std::memset(acc, 0, sizeof(float) * 32 * rows);
    for (int64_t b = 0; b < p.geo.blocks; ++b) {
      const uint8_t *rowsOf[2];
      for (int j = 0; j < 2; ++j) {
        const uint8_t *block = panel[j] + b * p.geo.blockBytes;
        if constexpr (Bits == 8) {
          rowsOf[j] = block;
        } else {
          K::unpack<Bits>(block, bb[j]);
          rowsOf[j] = bb[j];
        }
      }
      for (int h = 0; h < halves; ++h) {
        const int64_t u = b * halves + h, k0 = u * U, g = k0 / f.group;
        const bool groupEnd = (k0 + U) % f.group == 0;
        __m512 s[2], mo[2];
        for (int j = 0; j < 2; ++j)
          K::scales(panel[j], p.geo, f, g, &s[j], &mo[j]);
        _tile_loadd(6, rowsOf[0] + 64 * tilesPerHalf * h, 64);
        _tile_loadd(7, rowsOf[1] + 64 * tilesPerHalf * h, 64);
        int64_t pending = -1;
        int pendingTiles = 0;
        for (int64_t tp = 0; tp < tiles; tp += 2) {
          const int n = tp + 1 < tiles ? 2 : 1;
          const int8_t *xa = a.xq + (m0 * D + 16 * tp) * a.ldx + k0;
          _tile_loadd(4, xa, a.ldx);
          _tile_zero(0);
          _tile_zero(1);
          _tile_dpbsud(0, 4, 6);
          _tile_dpbsud(1, 4, 7);
          if (n == 2) {
            _tile_loadd(5, xa + 16 * a.ldx, a.ldx);
            _tile_zero(2);
            _tile_zero(3);
            _tile_dpbsud(2, 5, 6);
            _tile_dpbsud(3, 5, 7);
          }
          // The previous pair's epilogue while the tile unit works.
          if (pending >= 0)
            epilogue<D>(p, cbuf[(pending / 2) & 1], pending, pendingTiles, m0,
                        m1, panels, u, g, groupEnd, s, mo, acc);
          CTiles &c = cbuf[(tp / 2) & 1];
          _tile_stored(0, c[0], 64);
          _tile_stored(1, c[1], 64);
          if (n == 2) {
            _tile_stored(2, c[2], 64);
            _tile_stored(3, c[3], 64);
          }
          pending = tp;
          pendingTiles = n;
        }
        epilogue<D>(p, cbuf[(pending / 2) & 1], pending, pendingTiles, m0, m1,
                    panels, u, g, groupEnd, s, mo, acc);
      }
    }
    K::store(p, acc, m0, m1, pi, panels);
  }
}

// ---------------------------------------------------------------------------
// 32-input x blocks, balanced grid, 2 or 4 bits (w4 g32, the llama.cpp
// Q4_0 peer; int11's blocks are 32 inputs at any group): the per-block
// path above would fold every tile product into memory with two scales and
// the group offset. Here instead (a unit is a 32-input block; at group 64
// two units share their group's scale):
// - the quants enter as signed 2q - (2^b - 1) = 2 (q - c) (tdpbssd), so
//   the grid offset is inside the integer dot and the fold needs no
//   mo * xs term: y = sum_u dot_u * dx_u * (s_u / 2), exactly the same
//   integer dots (|2 (q - c)| <= 15);
// - one A tile (16 prepared rows) against D panels keeps its outputs in
//   16 zmm registers across a chunk of units (int8x2: 8 x rows x 2
//   panels, int8: 16 x rows x 1 panel), so a fold is cvt, mul, fma on
//   registers (no accumulator load and store per unit);
// - while the tile unit computes unit u, unit u - 2 is folded (issueUnit).
// A chunk's weights are unpacked (and signed) once into bs and its scales
// halved into hs, then reused by every A tile of the range.
//
// int11 (Pair): x row m's unit holds both digits side by side (the
// pair-tile layout, qgemm_isa.h), so one K = 64 tile of 16 x rows meets a
// unit's B tile of [2^S v; v] (16 tile rows: at 2 bits v = w and 32 w is
// within +-96; at 4 bits v = q - 8 and 16 v within [-128, 112], the half
// step to w / 2 = v + 1/2 added in the fold) and one tdpbssd gives
// sum_k v_k (2^S q0_k + q1_k): int8x2's fold-free combine, at int8's count
// of tile products and folds. Its dx and xs are laid out per 16-row tile
// ([tile][unit][16]; A tiles start at multiples of 16 rows, as kUnitRows
// ranges do), so the fold reads them at fixed offsets.
// ---------------------------------------------------------------------------

constexpr int kChunkBlocks = 8;                    // 512 inputs, 16 units
constexpr int kChunkUnits = 2 * kChunkBlocks;      // of 32 inputs
constexpr int kUnitTileBytes = 8 * 64;             // B tile of one unit

template <int Bits>
FM_GEMM_INLINE void unpackSigned(const uint8_t *block, uint8_t *rows) {
  constexpr int V = 2 * Bits, P = 8 / Bits;
  const __m512i mask = _mm512_set1_epi8(static_cast<char>((1 << Bits) - 1));
  const __m512i top = _mm512_set1_epi8(static_cast<char>((1 << Bits) - 1));
  for (int v = 0; v < V; ++v) {
    const __m512i vec = _mm512_loadu_si512(block + 64 * v);
    for (int j = 0; j < P; ++j) {
      const __m512i q = _mm512_and_si512(
          j ? _mm512_srli_epi16(vec, Bits * j) : vec, mask);
      _mm512_store_si512(rows + 64 * (v + V * j),
                         _mm512_sub_epi8(_mm512_add_epi8(q, q), top));
    }
  }
}

// The int11 B tiles of a block's 2 units: [2^S v; v] per unit (S =
// int11ShiftForBits), 16 tile rows (unit r / 8 of tile row r of
// unpackSigned's layout, then its row r % 8), with v the weight's signed
// byte:
// - at 2 bits v = w = 2q - 3 (|32 w| <= 96): the grid offset inside the dot;
// - at 4 bits v = q - 8 (16 v in [-128, 112]), so that S = 4 fits where the
//   doubled w = 2q - 15 left room for only 8 w: the weight is v + 1/2 and
//   the fold adds the half through x's group sum (foldUnit's Offset).
template <int Bits>
FM_GEMM_INLINE void unpackSignedPair(const uint8_t *block, uint8_t *units) {
  constexpr int V = 2 * Bits, P = 8 / Bits, S = gdetail::int11ShiftForBits(Bits);
  constexpr bool Offset = pairTileHalfOffset(Bits);
  static_assert(Offset ? (((1 << Bits) - 1) << S) <= 255 && (8 << S) <= 128
                       : (((1 << Bits) - 1) << S) <= 127 &&
                             (((1 << Bits) - 1) << (S + 1)) <= 255,
                "2^S v within a signed byte, and its shift within a byte");
  const __m512i mask = _mm512_set1_epi8(static_cast<char>((1 << Bits) - 1));
  // The byte subtracted from (q << shift): the centre (2^b - 1) << S of
  // the doubled grid, or 8 << S (-128) for q - 8.
  const __m512i top = _mm512_set1_epi8(
      static_cast<char>(Offset ? 1 << (Bits - 1) : (1 << Bits) - 1));
  const __m512i topS = _mm512_set1_epi8(static_cast<char>(
      Offset ? (1 << (Bits - 1)) << S : ((1 << Bits) - 1) << S));
  for (int v = 0; v < V; ++v) {
    const __m512i vec = _mm512_loadu_si512(block + 64 * v);
    for (int j = 0; j < P; ++j) {
      const int r = v + V * j;
      uint8_t *unit = units + (r / 8) * 2 * kUnitTileBytes + 64 * (r % 8);
      const __m512i q = _mm512_and_si512(
          j ? _mm512_srli_epi16(vec, Bits * j) : vec, mask);
      // The shifted q stays in its byte, so the 16-bit shift is exact.
      if constexpr (Offset) {
        _mm512_store_si512(unit,
                           _mm512_sub_epi8(_mm512_slli_epi16(q, S), topS));
        _mm512_store_si512(unit + kUnitTileBytes, _mm512_sub_epi8(q, top));
      } else {
        _mm512_store_si512(unit,
                           _mm512_sub_epi8(_mm512_slli_epi16(q, S + 1), topS));
        _mm512_store_si512(unit + kUnitTileBytes,
                           _mm512_sub_epi8(_mm512_add_epi8(q, q), top));
      }
    }
  }
}

// Folds the stored C tiles (c[j]: 16 prepared rows x 16 int32, panel j) of
// unit u into acc[i][j] for the tile's first `count` x rows (D == 2: digit 0
// weighs 2^hiShift). Row i's dx is dx[i ldd], or dx[i] in the pair-tile
// layout (Pair: the tile's 16 rows side by side, so fixed offsets).
// Offset (the 4-bit pair tile, whose dot is over q - 8): od[i] is the half
// step's share, 1/2 of the unit's sum of dequantized x (xs, halved by the
// prepare), added before the group scale hs (then s itself, not s / 2).
template <int D, bool Pair, bool Offset>
FM_GEMM_INLINE void foldUnit(const int32_t (*c)[256], const float *dx,
                             int64_t ldd, int count, const __m512 *hs,
                             int hiShift, __m512 (&acc)[16 / D][D],
                             const float *od) {
#pragma GCC unroll 16
  for (int i = 0; i < 16 / D; ++i) {
    if (i >= count)
      break;
    const __m512 d = _mm512_set1_ps(dx[Pair ? i : i * ldd]);
#pragma GCC unroll 2
    for (int j = 0; j < D; ++j) {
      __m512i v = _mm512_load_si512(c[j] + 16 * D * i);
      if constexpr (D == 2)
        v = _mm512_add_epi32(_mm512_slli_epi32(v, hiShift),
                             _mm512_load_si512(c[j] + 16 * D * i + 16));
      const __m512 x =
          Offset ? _mm512_fmadd_ps(_mm512_cvtepi32_ps(v), d,
                                   _mm512_set1_ps(od[i]))
                 : _mm512_mul_ps(_mm512_cvtepi32_ps(v), d);
      acc[i][j] = _mm512_fmadd_ps(x, hs[j], acc[i][j]);
    }
  }
}

// The tile products of a unit, Odd = u & 1: A tile 4 + Odd against its B
// tiles into C tiles 2 Odd (+ 1: int8x2's second panel). int8 (and int11's
// pair tile) alternates its B tile too (6 + Odd), so that loading unit u's
// tiles never waits for unit u - 1's product; int8x2 has no tiles left for
// that and takes 6 and 7 for its two panels, so that its first B tile waits
// only for unit u - 1's first product. (1 thread, 64 x 3072 x 3072 w4 g32
// int8x2: 299-321 GOPS with one A tile and each unit's C tiles stored before
// the next is issued, 355-388 so.)
// (GCC's _tile_* are macros that paste their tile numbers into the asm
// text, so each number below is a literal.)
template <int D, int Odd>
FM_GEMM_INLINE void issueUnit(const int8_t *au, int64_t lda, const uint8_t *b0,
                              const uint8_t *b1) {
  if constexpr (D == 1 && Odd) {
    _tile_loadd(5, au, lda);
    _tile_loadd(7, b0, 64);
    _tile_zero(2);
    _tile_dpbssd(2, 5, 7);
  } else if constexpr (D == 1) {
    _tile_loadd(4, au, lda);
    _tile_loadd(6, b0, 64);
    _tile_zero(0);
    _tile_dpbssd(0, 4, 6);
  } else if constexpr (Odd) {
    _tile_loadd(5, au, lda);
    _tile_loadd(6, b0, 64);
    _tile_zero(2);
    _tile_dpbssd(2, 5, 6);
    _tile_loadd(7, b1, 64);
    _tile_zero(3);
    _tile_dpbssd(3, 5, 7);
  } else {
    _tile_loadd(4, au, lda);
    _tile_loadd(6, b0, 64);
    _tile_zero(0);
    _tile_dpbssd(0, 4, 6);
    _tile_loadd(7, b1, 64);
    _tile_zero(1);
    _tile_dpbssd(1, 4, 7);
  }
}

template <int D, int Odd> FM_GEMM_INLINE void storeUnit(int32_t (*c)[256]) {
  if constexpr (Odd) {
    _tile_stored(2, c[0], 64);
    if constexpr (D == 2)
      _tile_stored(3, c[1], 64);
  } else {
    _tile_stored(0, c[0], 64);
    if constexpr (D == 2)
      _tile_stored(1, c[1], 64);
  }
}

// D == 1 with Pair: int11 in the pair-tile layout.
template <int D, int Bits, bool Pair = false>
void rangeG32(const Params &p, int64_t m0, int64_t m1, int64_t p0,
              int64_t p1) {
  static_assert(!Pair || D == 1, "the pair tile holds one x row per row");
  constexpr int R = 16 / D; // x rows per A tile
  // A unit's B tile, and the A tiles' row stride and unit step.
  constexpr int kUnitBytes = Pair ? 2 * kUnitTileBytes : kUnitTileBytes;
  const Act &a = p.act;
  const int64_t lda = Pair ? 2 * a.ldx : a.ldx;
  constexpr int kUnitStep = Pair ? 64 : 32;
  const int64_t rows = m1 - m0;
  const int64_t tiles = (rows * D + 15) / 16;
  const int64_t units = p.geo.blocks * 2;
  constexpr int kChunk = Pair ? kChunkUnits / 2 : kChunkUnits;
  // The 4-bit pair tile's dot is over q - 8, not 2q - 15: its scales are
  // not halved, and the half step comes from x's group sums (od).
  constexpr bool Offset = Pair && pairTileHalfOffset(Bits);
  constexpr float kHalf = Offset ? 1.0f : 0.5f;
  alignas(64) uint8_t bs[2][kChunk * kUnitBytes];
  alignas(64) float hs[2][kChunk][16];
  alignas(64) int32_t cbuf[2][2][256];
  alignas(64) float acc[kMaxUnitRows * 32];
  for (int64_t pi = p0; pi < p1; pi += 2) {
    const int panels = p1 - pi >= 2 ? 2 : 1;
    const uint8_t *panel[2] = {p.w + pi * p.geo.panelBytes,
                               p.w + (pi + panels - 1) * p.geo.panelBytes};
    for (int64_t c0 = 0; c0 < units; c0 += kChunk) {
      const int cu = units - c0 < kChunk ? int(units - c0) : kChunk;
      // Both panels (a lone panel twice: int8x2 computes both and drops
      // the copy).
      for (int j = 0; j < 2; ++j) {
        for (int b = 0; b < cu / 2; ++b) {
          const uint8_t *block = panel[j] + (c0 / 2 + b) * p.geo.blockBytes;
          if constexpr (Pair)
            unpackSignedPair<Bits>(block, bs[j] + b * 2 * kUnitBytes);
          else
            unpackSigned<Bits>(block, bs[j] + b * 2 * kUnitBytes);
        }
        // Unit u's group: u / (group / 32) (int11's 32-input units at group
        // 64 or 128 share their group's scale).
        const uint8_t *sc = panel[j] + p.geo.scaleOffset;
        const int unitsPerGroup = p.f.group / 32;
        for (int u = 0; u < cu; ++u) {
          const uint8_t *group =
              sc + sizeof(PanelHalves) * ((c0 + u) / unitsPerGroup);
          _mm512_store_ps(hs[j][u],
                          _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256(
                                            reinterpret_cast<const __m256i *>(
                                                group))),
                                        _mm512_set1_ps(kHalf)));
        }
      }
      for (int64_t t = 0; t < tiles; ++t) {
        const int64_t first = m0 + R * t;
        const int count = int(m1 - first < R ? m1 - first : R);
        // int8x2: both panels per A tile; int8: one panel per pass.
        for (int j0 = 0; j0 < (D == 2 ? 1 : panels); ++j0) {
          __m512 r[R][D];
          for (int i = 0; i < R; ++i)
            for (int j = 0; j < D; ++j)
              r[i][j] = c0 == 0 || i >= count
                            ? _mm512_setzero_ps()
                            : _mm512_load_ps(acc + (first - m0 + i) * 32 +
                                             16 * (j0 + j));
          const int8_t *xa = a.xq + (m0 * D + 16 * t) * lda + c0 * kUnitStep;
          // Unit u's dx (and the 4-bit pair tile's half steps, od: its unit
          // is the group, whose xs the prepare halved) of row i: at
          // dx[u + i ldd], or in the pair-tile layout dx[16 u + i].
          const int64_t unitStep = Pair ? 16 : 1;
          const float *dx = a.dx + first * a.ldd + c0 * unitStep;
          const float *od = a.xs + first * a.lds + c0 * unitStep;
          // Two units in flight: unit u's products are issued, then unit
          // u - 2 is folded, and only then are unit u - 1's C tiles stored,
          // so that a store does not wait for a product still running.
          for (int u = 0; u <= cu + 1; ++u) {
            if (u < cu) {
              const int8_t *au = xa + kUnitStep * u;
              const uint8_t *b0 = bs[j0] + u * kUnitBytes;
              const uint8_t *b1 = bs[1] + u * kUnitBytes;
              if (u & 1)
                issueUnit<D, 1>(au, lda, b0, b1);
              else
                issueUnit<D, 0>(au, lda, b0, b1);
            }
            if (u >= 2) {
              const int pu = u - 2;
              __m512 h[D];
              for (int j = 0; j < D; ++j)
                h[j] = _mm512_load_ps(hs[j0 + j][pu]);
              foldUnit<D, Pair, Offset>(cbuf[pu & 1], dx + unitStep * pu,
                                        a.ldd, count, h, a.hiShift, r,
                                        od + unitStep * pu);
            }
            if (u >= 1 && u - 1 < cu) {
              if ((u - 1) & 1)
                storeUnit<D, 1>(cbuf[1]);
              else
                storeUnit<D, 0>(cbuf[0]);
            }
          }
          for (int i = 0; i < count; ++i)
            for (int j = 0; j < D; ++j)
              _mm512_store_ps(acc + (first - m0 + i) * 32 + 16 * (j0 + j),
                              r[i][j]);
        }
      }
    }
    K::store(p, acc, m0, m1, pi, panels);
  }
}

template <int D>
void range(const Params &p, int64_t m0, int64_t m1, int64_t p0, int64_t p1) {
  if (m1 - m0 == 1 && !p.act.pairTile)
    return avx512VnniMatvec(p, m0, p0, p1);
  if constexpr (D == 2) {
    if (p.act.pairTile) {
      if (p.f.bits == 4)
        return rangeG32<1, 4, true>(p, m0, m1, p0, p1);
      return rangeG32<1, 2, true>(p, m0, m1, p0, p1);
    }
  }
  if (p.act.unit == 32 && p.f.grid == QuantGrid::Balanced) {
    if (p.f.bits == 4)
      return rangeG32<D, 4>(p, m0, m1, p0, p1);
    if (p.f.bits == 2)
      return rangeG32<D, 2>(p, m0, m1, p0, p1);
  }
  switch (p.f.bits) {
  case 2:
    return rangeBits<D, 2>(p, m0, m1, p0, p1);
  case 4:
    return rangeBits<D, 4>(p, m0, m1, p0, p1);
  default:
    return rangeBits<D, 8>(p, m0, m1, p0, p1);
  }
}

} // namespace

bool amxUsable() {
  static const bool usable = [] {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
      return false;
    if (!(d & (1u << 24)) || !(d & (1u << 25))) // AMX-TILE, AMX-INT8
      return false;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) // OSXSAVE
      return false;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    (void)hi;
    if ((lo & (3u << 17)) != (3u << 17)) // XTILECFG, XTILEDATA
      return false;
#if defined(__linux__)
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
    return false;
#endif
  }();
  return usable;
}

const GemmIsa kGemmAmx[2] = {
    {&Prepare<Tag>::rows<2>, &range<2>, &setup, &teardown, true},
    {&Prepare<Tag>::rows<1>, &range<1>, &setup, &teardown}};

} // namespace fm::kernels::gdetail

// fm-stream-read: this machine's memory read bandwidth, the roofline of
// decode. Streams a buffer much larger than the last-level cache with 1..N
// threads (each reads its own contiguous part) and prints the median GB/s,
// measured two ways in the same run:
//   read_gb_per_s    a sum of 64-bit integers, four independent vectors
//                    of the widest ISA compiled for (AVX-512, AVX2, SSE2,
//                    NEON; eight scalar sums elsewhere): one add per 8
//                    bytes, far from compute-bound (the float sum this
//                    replaced was a serial scalar chain wherever there was
//                    no AVX-512: 8.3 GB/s where an AVX2 machine reads 27);
//   memchr_gb_per_s  the C library's memchr for a byte that is not there,
//                    hand-written per ISA by the C library (a second,
//                    independent reader).
// A probe that reads much less than memchr on the same buffer is measuring
// its own loop, not the memory: the program then says so and exits 1.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#if defined(__AVX2__) || defined(__AVX512F__) || defined(__SSE2__)
#include <immintrin.h>
#elif defined(__ARM_NEON)
#include <arm_neon.h>
#endif

namespace {

/// Sums the 64-bit words of [p, p + n): reads every cache line once, four
/// vectors of the widest ISA compiled for per step (independent adds, so
/// the loop waits on memory only), and a plain loop for the rest.
uint64_t sumRange(const uint64_t *p, size_t n) {
  size_t i = 0;
  uint64_t s = 0;
#if defined(__AVX512F__)
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (; i + 32 <= n; i += 32) {
    a0 = _mm512_add_epi64(a0, _mm512_load_si512(p + i));
    a1 = _mm512_add_epi64(a1, _mm512_load_si512(p + i + 8));
    a2 = _mm512_add_epi64(a2, _mm512_load_si512(p + i + 16));
    a3 = _mm512_add_epi64(a3, _mm512_load_si512(p + i + 24));
  }
  s = _mm512_reduce_add_epi64(_mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)));
#elif defined(__AVX2__)
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (; i + 16 <= n; i += 16) {
    a0 = _mm256_add_epi64(a0, _mm256_load_si256(reinterpret_cast<const __m256i *>(p + i)));
    a1 = _mm256_add_epi64(a1, _mm256_load_si256(reinterpret_cast<const __m256i *>(p + i + 4)));
    a2 = _mm256_add_epi64(a2, _mm256_load_si256(reinterpret_cast<const __m256i *>(p + i + 8)));
    a3 = _mm256_add_epi64(a3, _mm256_load_si256(reinterpret_cast<const __m256i *>(p + i + 12)));
  }
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i *>(lanes),
                     _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3)));
  s = lanes[0] + lanes[1] + lanes[2] + lanes[3];
#elif defined(__SSE2__)
  __m128i a0 = _mm_setzero_si128(), a1 = a0, a2 = a0, a3 = a0;
  for (; i + 8 <= n; i += 8) {
    a0 = _mm_add_epi64(a0, _mm_load_si128(reinterpret_cast<const __m128i *>(p + i)));
    a1 = _mm_add_epi64(a1, _mm_load_si128(reinterpret_cast<const __m128i *>(p + i + 2)));
    a2 = _mm_add_epi64(a2, _mm_load_si128(reinterpret_cast<const __m128i *>(p + i + 4)));
    a3 = _mm_add_epi64(a3, _mm_load_si128(reinterpret_cast<const __m128i *>(p + i + 6)));
  }
  alignas(16) uint64_t lanes[2];
  _mm_store_si128(reinterpret_cast<__m128i *>(lanes),
                  _mm_add_epi64(_mm_add_epi64(a0, a1), _mm_add_epi64(a2, a3)));
  s = lanes[0] + lanes[1];
#elif defined(__ARM_NEON)
  uint64x2_t a0 = vdupq_n_u64(0), a1 = a0, a2 = a0, a3 = a0;
  for (; i + 8 <= n; i += 8) {
    a0 = vaddq_u64(a0, vld1q_u64(p + i));
    a1 = vaddq_u64(a1, vld1q_u64(p + i + 2));
    a2 = vaddq_u64(a2, vld1q_u64(p + i + 4));
    a3 = vaddq_u64(a3, vld1q_u64(p + i + 6));
  }
  s = vaddvq_u64(vaddq_u64(vaddq_u64(a0, a1), vaddq_u64(a2, a3)));
#else
  uint64_t a[8] = {};
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k)
      a[k] += p[i + k];
  for (uint64_t v : a)
    s += v;
#endif
  for (; i < n; ++i)
    s += p[i];
  return s;
}

/// memchr for a byte the buffer does not hold: 0 (it must return null).
uint64_t memchrRange(const uint64_t *p, size_t n) {
  return std::memchr(p, 0xff, n * sizeof(uint64_t)) != nullptr;
}

/// The median GB/s of `reps` passes of `read` over buf with t threads, and
/// the slowest and fastest pass.
struct Rate {
  double median, min, max;
};

Rate measure(const uint64_t *buf, size_t n, int t, int reps,
             const std::function<uint64_t(const uint64_t *, size_t)> &read,
             volatile uint64_t &sink) {
  std::vector<double> gbs;
  for (int r = 0; r < reps; ++r) {
    std::vector<std::thread> ts;
    std::vector<uint64_t> part(t);
    auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < t; ++k)
      ts.emplace_back([&, k] {
        size_t b = n / t * k / 8 * 8, e = k + 1 == t ? n : n / t * (k + 1) / 8 * 8;
        part[k] = read(buf + b, e - b);
      });
    for (auto &th : ts)
      th.join();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (uint64_t v : part)
      sink = sink + v;
    gbs.push_back(double(n * sizeof(uint64_t)) / s / 1e9);
  }
  std::sort(gbs.begin(), gbs.end());
  return {gbs[gbs.size() / 2], gbs.front(), gbs.back()};
}

} // namespace

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 2048;
  int maxThreads = argc > 2 ? std::atoi(argv[2]) : 2;
  int reps = argc > 3 ? std::atoi(argv[3]) : 7;
  if (mib == 0 || maxThreads < 1 || reps < 1) {
    std::fprintf(stderr, "usage: fm-stream-read [MIB (2048) [MAX_THREADS (2) [REPS (7)]]]\n");
    return 2;
  }
  size_t n = mib * (size_t(1) << 20) / sizeof(uint64_t);
  auto *buf = static_cast<uint64_t *>(std::aligned_alloc(64, n * sizeof(uint64_t)));
  if (!buf) {
    std::fprintf(stderr, "fm-stream-read: cannot allocate %zu MiB\n", mib);
    return 1;
  }
  for (size_t i = 0; i < n; ++i)
    buf[i] = i & 7; // no 0xff byte anywhere: memchr reads it all
  volatile uint64_t sink = 0;
  bool agree = true;
  for (int t = 1; t <= maxThreads; ++t) {
    // Alternated, so that a noisy phase of a shared machine hits both.
    Rate sum{0, 1e300, 0}, chr{0, 1e300, 0};
    std::vector<double> sums, chrs;
    for (int r = 0; r < reps; ++r) {
      Rate a = measure(buf, n, t, 1, sumRange, sink), b = measure(buf, n, t, 1, memchrRange, sink);
      sums.push_back(a.median);
      chrs.push_back(b.median);
    }
    std::sort(sums.begin(), sums.end());
    std::sort(chrs.begin(), chrs.end());
    sum = {sums[sums.size() / 2], sums.front(), sums.back()};
    chr = {chrs[chrs.size() / 2], chrs.front(), chrs.back()};
    const double ratio = sum.median / chr.median;
    std::printf("{\"threads\": %d, \"read_gb_per_s\": %.2f, \"min\": %.2f, \"max\": %.2f, "
                "\"memchr_gb_per_s\": %.2f, \"read_over_memchr\": %.2f}\n",
                t, sum.median, sum.min, sum.max, chr.median, ratio);
    if (ratio < 0.8)
      agree = false;
  }
  std::free(buf);
  if (!agree) {
    std::fprintf(stderr, "fm-stream-read: the integer sum reads under 0.8 of memchr's rate: it "
                         "measures its own loop, not the memory (built for the wrong ISA?)\n");
    return 1;
  }
  return 0;
}

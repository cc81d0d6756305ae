// fm-stream-read: this machine's memory read bandwidth, the roofline of
// decode. Streams a buffer much larger than the last-level cache with 1..N
// threads (each reads its own contiguous part) and prints the median GB/s.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

namespace {

/// Sums the floats of [p, p + n): reads every cache line once.
float sumRange(const float *p, size_t n) {
#if defined(__AVX512F__)
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i));
    a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
  }
  float s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
#else
  float s = 0;
  size_t i = 0;
#endif
  for (; i < n; ++i)
    s += p[i];
  return s;
}

} // namespace

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 2048;
  int maxThreads = argc > 2 ? std::atoi(argv[2]) : 2;
  int reps = argc > 3 ? std::atoi(argv[3]) : 7;
  size_t n = mib * (1u << 20) / sizeof(float);
  float *buf = static_cast<float *>(std::aligned_alloc(64, n * sizeof(float)));
  if (!buf) {
    std::fprintf(stderr, "fm-stream-read: cannot allocate %zu MiB\n", mib);
    return 1;
  }
  for (size_t i = 0; i < n; ++i)
    buf[i] = float(i & 7);
  volatile float sink = 0;
  for (int t = 1; t <= maxThreads; ++t) {
    std::vector<double> gbs;
    for (int r = 0; r < reps; ++r) {
      std::vector<std::thread> ts;
      std::vector<float> part(t);
      auto t0 = std::chrono::steady_clock::now();
      for (int k = 0; k < t; ++k)
        ts.emplace_back([&, k] {
          size_t b = n / t * k / 64 * 64, e = k + 1 == t ? n : n / t * (k + 1) / 64 * 64;
          part[k] = sumRange(buf + b, e - b);
        });
      for (auto &th : ts)
        th.join();
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      for (float v : part)
        sink = sink + v;
      gbs.push_back(n * sizeof(float) / s / 1e9);
    }
    std::sort(gbs.begin(), gbs.end());
    std::printf("{\"threads\": %d, \"read_gb_per_s\": %.2f, \"min\": %.2f, \"max\": %.2f}\n", t,
                gbs[gbs.size() / 2], gbs.front(), gbs.back());
  }
  std::free(buf);
  return 0;
}

// fm-lora-side-bench: the decode cost of the LoRA side path (the down
// product t = A·x and the up product y += s·B·t of kernels/lora.h, rank 32,
// f16 and w8) at the full afm7 shapes, in GB/s against the base's w2 matvec
// and a plain stream read measured beside them in the same run.
//
// Per layer (hidden 2048, q 2048 + k/v 2·256, FFN 6656): base w2 matvecs
// qkv [2560][2048], out [2048][2048], gate/up [13312][2048], down
// [2048][6656]; the adapter's A's qkv [32][2048], out [32][2048], gate+up
// [64][2048] (stacked, one down product), down [32][6656], and Bᵀ's qkv
// [32][2560], out [32][2048], gate and up [32][6656], down [32][2048]: the
// 10 matrices per layer of bench/lora. One thread, as the 1-thread decode.
//
// Every round runs, back to back: a stream read of the base's bytes; the
// base alone (all layers); the base with each layer's side products after
// its matvecs (the decode order: their matrices cold, the base's stream
// between them), for f16 and w8, and for w8 the downs alone, the ups alone
// and the downs through qmatmul's int8 kernel; and the side products of one
// layer alone, repeated (in L2: the kernels' compute rate). Every base and
// side call is timed on its own, so a pass gives both rates and their ratio
// (vs_base: side GB/s / base GB/s) on the same minute of a shared machine.
// Medians over the rounds. Prints numbers, asserts none.
//
// Usage: fm-lora-side-bench [layers (28)] [rounds (7)]
#include "kernels/lora.h"
#include "kernels/qformat.h"
#include "kernels/qmatmul.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace {

using namespace fm::kernels;

constexpr int64_t kHidden = 2048, kQkv = 2560, kFfn = 6656, kRank = 32;
const QuantFormat kW2{2, 32, QuantGrid::Balanced};

// Random quants, scales ~0.01 (no subnormals, no NaN).
std::vector<uint8_t> packedMatrix(std::mt19937 &rng, QuantFormat f, int64_t N,
                                  int64_t K) {
  const size_t row = packedRowBytes(f, K);
  std::vector<uint8_t> m(row * N);
  for (int64_t n = 0; n < N; ++n) {
    uint8_t *r = m.data() + n * row;
    for (int64_t k = 0; k < quantBytes(f, K); ++k)
      r[k] = uint8_t(rng());
    for (int64_t g = 0; g < quantGroups(f, K); ++g) {
      const uint16_t h = uint16_t(0x2000 | (rng() & 0x3ff));
      std::memcpy(r + quantBytes(f, K) + 2 * g, &h, 2);
    }
  }
  return m;
}

std::vector<uint8_t> f16Matrix(std::mt19937 &rng, int64_t N, int64_t K) {
  std::vector<uint8_t> m(size_t(N * K) * 2);
  for (int64_t i = 0; i < N * K; ++i) {
    const uint16_t h = uint16_t(0x2000 | (rng() & 0x83ff));
    std::memcpy(m.data() + 2 * i, &h, 2);
  }
  return m;
}

struct Base {
  std::vector<uint8_t> qkv, out, gateUp, down;
};
struct Side {
  std::vector<uint8_t> aQkv, aOut, aGateUp, aDown, bQkv, bOut, bGate, bUp, bDown;
  bool q8;
};

LoraMatrix mat(const std::vector<uint8_t> &d, int64_t rows, int64_t cols,
               bool q8) {
  LoraMatrix m;
  m.data = d.data();
  m.rows = rows;
  m.cols = cols;
  m.q8 = q8;
  m.group = 32;
  return m;
}

Side makeSide(std::mt19937 &rng, bool q8) {
  const QuantFormat w8{8, 32, QuantGrid::Balanced};
  auto m = [&](int64_t r, int64_t c) {
    return q8 ? packedMatrix(rng, w8, r, c) : f16Matrix(rng, r, c);
  };
  Side s;
  s.q8 = q8;
  s.aQkv = m(kRank, kHidden);
  s.aOut = m(kRank, kHidden);
  s.aGateUp = m(2 * kRank, kHidden);
  s.aDown = m(kRank, kFfn);
  s.bQkv = m(kRank, kQkv);
  s.bOut = m(kRank, kHidden);
  s.bGate = m(kRank, kFfn);
  s.bUp = m(kRank, kFfn);
  s.bDown = m(kRank, kHidden);
  return s;
}

size_t downBytes(const Side &s) {
  return s.aQkv.size() + s.aOut.size() + s.aGateUp.size() + s.aDown.size();
}
size_t upBytes(const Side &s) {
  return s.bQkv.size() + s.bOut.size() + s.bGate.size() + s.bUp.size() +
         s.bDown.size();
}

struct Work {
  std::vector<float> xh, xf, yQkv, yOut, yGateUp, yDown, t;
  std::vector<uint8_t> scratch;
  Work()
      : xh(kHidden, 0.5f), xf(kFfn, 0.25f), yQkv(kQkv), yOut(kHidden),
        yGateUp(2 * kFfn), yDown(kHidden), t(4 * kRank),
        scratch(std::max(qmatmulScratchBytes(kW2, 1, kFfn, QActivations::Int8x2),
                         qmatmulScratchBytes(QuantFormat{8, 32, QuantGrid::Balanced},
                                             1, kFfn, QActivations::Int8x2)) +
                64) {
  }
};

enum Parts { kNone = 0, kDown = 1, kUp = 2, kBoth = 3 };

uint8_t *aligned(std::vector<uint8_t> &v);
bool gViaQmatmul = false;
void down(Work &w, const float *x, const std::vector<uint8_t> &a, int64_t rows,
          int64_t K, bool q8) {
  if (q8 && gViaQmatmul) {
    qmatmul(x, 1, K, a.data(), QuantFormat{8, 32, QuantGrid::Balanced}, rows,
            w.t.data(), false, nullptr, QActivations::Int8x2,
            aligned(w.scratch));
    return;
  }
  LoraDown d{mat(a, rows, K, q8), 0};
  loraDown(x, 1, K, w.t.data(), rows, &d, 1, nullptr);
}
void up(Work &w, const std::vector<uint8_t> &b, int64_t N, bool q8, float *y) {
  LoraUp u{0, mat(b, kRank, N, q8), y, 0.5f};
  loraUp(w.t.data(), 1, kRank, N, &u, 1, nullptr);
}

uint8_t *aligned(std::vector<uint8_t> &v) {
  return reinterpret_cast<uint8_t *>(
      (reinterpret_cast<uintptr_t>(v.data()) + 63) & ~uintptr_t(63));
}

// One decode pass over every layer: base matvecs, each followed by its side
// products when `side` is given; each call is timed on its own, the base's
// and the side's times summed apart (a clock read costs ~20 ns, a call
// tens of microseconds), so the two rates come from the same pass.
struct PassTime {
  double base = 0, side = 0;
};

template <typename F> void timed(double &sum, F &&f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  sum += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
             .count();
}

PassTime pass(Work &w, std::vector<Base> &base, const std::vector<Side> *side,
              Parts parts) {
  PassTime pt;
  uint8_t *scr = aligned(w.scratch);
  auto matvec = [&](const float *x, int64_t K, const std::vector<uint8_t> &m,
                    int64_t N, float *y) {
    timed(pt.base, [&] {
      qmatmul(x, 1, K, m.data(), kW2, N, y, false, nullptr,
              QActivations::Int8x2, scr);
    });
  };
  for (size_t l = 0; l < base.size(); ++l) {
    Base &b = base[l];
    const Side *s = side ? &(*side)[l] : nullptr;
    const bool d = s && (parts & kDown), u = s && (parts & kUp);
    matvec(w.xh.data(), kHidden, b.qkv, kQkv, w.yQkv.data());
    if (d)
      timed(pt.side, [&] { down(w, w.xh.data(), s->aQkv, kRank, kHidden, s->q8); });
    if (u)
      timed(pt.side, [&] { up(w, s->bQkv, kQkv, s->q8, w.yQkv.data()); });
    matvec(w.xh.data(), kHidden, b.out, kHidden, w.yOut.data());
    if (d)
      timed(pt.side, [&] { down(w, w.xh.data(), s->aOut, kRank, kHidden, s->q8); });
    if (u)
      timed(pt.side, [&] { up(w, s->bOut, kHidden, s->q8, w.yOut.data()); });
    matvec(w.xh.data(), kHidden, b.gateUp, 2 * kFfn, w.yGateUp.data());
    if (d)
      timed(pt.side,
            [&] { down(w, w.xh.data(), s->aGateUp, 2 * kRank, kHidden, s->q8); });
    if (u)
      timed(pt.side, [&] {
        up(w, s->bGate, kFfn, s->q8, w.yGateUp.data());
        up(w, s->bUp, kFfn, s->q8, w.yGateUp.data() + kFfn);
      });
    matvec(w.xf.data(), kFfn, b.down, kHidden, w.yDown.data());
    if (d)
      timed(pt.side, [&] { down(w, w.xf.data(), s->aDown, kRank, kFfn, s->q8); });
    if (u)
      timed(pt.side, [&] { up(w, s->bDown, kHidden, s->q8, w.yDown.data()); });
  }
  return pt;
}

// The side products of layer 0 alone, `reps` times: its matrices stay in
// L2, so this is the kernels' compute rate without memory.
void hot(Work &w, const Side &s, int reps) {
  for (int i = 0; i < reps; ++i) {
    down(w, w.xh.data(), s.aQkv, kRank, kHidden, s.q8);
    up(w, s.bQkv, kQkv, s.q8, w.yQkv.data());
    down(w, w.xh.data(), s.aOut, kRank, kHidden, s.q8);
    up(w, s.bOut, kHidden, s.q8, w.yOut.data());
    down(w, w.xh.data(), s.aGateUp, 2 * kRank, kHidden, s.q8);
    up(w, s.bGate, kFfn, s.q8, w.yGateUp.data());
    up(w, s.bUp, kFfn, s.q8, w.yGateUp.data() + kFfn);
    down(w, w.xf.data(), s.aDown, kRank, kFfn, s.q8);
    up(w, s.bDown, kHidden, s.q8, w.yDown.data());
  }
}

float streamRead(std::vector<Base> &base) {
  float s = 0;
  for (Base &b : base)
    for (auto *v : {&b.qkv, &b.out, &b.gateUp, &b.down}) {
      const uint64_t *p = reinterpret_cast<const uint64_t *>(v->data());
      uint64_t acc[8] = {};
      const size_t n = v->size() / 64;
      for (size_t i = 0; i < n; ++i)
        for (int j = 0; j < 8; ++j)
          acc[j] += p[8 * i + j];
      for (uint64_t a : acc)
        s += float(a & 0xff);
    }
  return s;
}

template <typename F> double seconds(F &&f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  const int layers = argc > 1 ? std::atoi(argv[1]) : 28;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 7;
  if (layers < 1 || rounds < 1) {
    std::fprintf(stderr, "usage: fm-lora-side-bench [layers] [rounds]\n");
    return 2;
  }
  std::mt19937 rng(7);
  std::vector<Base> base(layers);
  size_t baseBytes = 0;
  for (Base &b : base) {
    b.qkv = packedMatrix(rng, kW2, kQkv, kHidden);
    b.out = packedMatrix(rng, kW2, kHidden, kHidden);
    b.gateUp = packedMatrix(rng, kW2, 2 * kFfn, kHidden);
    b.down = packedMatrix(rng, kW2, kHidden, kFfn);
    baseBytes += b.qkv.size() + b.out.size() + b.gateUp.size() + b.down.size();
  }
  std::vector<Side> f16, w8;
  for (int l = 0; l < layers; ++l) {
    f16.push_back(makeSide(rng, false));
    w8.push_back(makeSide(rng, true));
  }
  Work w;
  volatile float sink = 0;
  struct Row {
    const char *name;
    std::vector<Side> *side;
    Parts parts;
    std::vector<double> t, ratio;
    bool viaQmatmul = false;
  };
  std::vector<Row> rows = {
      {"f16 down+up", &f16, kBoth, {}, {}},
      {"w8 down+up", &w8, kBoth, {}, {}},
      {"w8 down", &w8, kDown, {}, {}},
      {"w8 up", &w8, kUp, {}, {}},
      {"w8 down by qmatmul (VNNI)", &w8, kDown, {}, {}, true}};
  std::vector<double> stream, baseT, hotF16, hotW8;
  constexpr int kHotReps = 50;
  pass(w, base, &f16, kBoth); // warm-up: page faults, code
  pass(w, base, &w8, kBoth);
  for (int r = 0; r < rounds; ++r) {
    stream.push_back(seconds([&] { sink = sink + streamRead(base); }));
    baseT.push_back(pass(w, base, nullptr, kNone).base);
    for (Row &row : rows) {
      gViaQmatmul = row.viaQmatmul;
      const PassTime pt = pass(w, base, row.side, row.parts);
      row.t.push_back(pt.side);
      row.ratio.push_back(pt.side / pt.base); // side s per base s
    }
    gViaQmatmul = false;
    hotF16.push_back(seconds([&] { hot(w, f16[0], kHotReps); }));
    hotW8.push_back(seconds([&] { hot(w, w8[0], kHotReps); }));
    std::fprintf(stderr, "round %d: base %.1f ms\n", r, 1e3 * baseT.back());
  }
  const double gb = 1e-9;
  std::printf("{\"layers\": %d, \"rounds\": %d, \"lora_path\": \"%s\", "
              "\"base_mb\": %.1f,\n",
              layers, rounds, loraPathName(), baseBytes * 1e-6);
  std::printf(" \"stream_read_gb_s\": %.2f, \"base_w2_matvec_gb_s\": %.2f,\n",
              baseBytes * gb / median(stream), baseBytes * gb / median(baseT));
  std::printf(" \"hot_in_l2_gb_s\": {\"f16\": %.2f, \"w8\": %.2f},\n",
              kHotReps * (downBytes(f16[0]) + upBytes(f16[0])) * gb /
                  median(hotF16),
              kHotReps * (downBytes(w8[0]) + upBytes(w8[0])) * gb /
                  median(hotW8));
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row &row = rows[i];
    const Side &s = (*row.side)[0];
    const size_t bytes =
        layers * ((row.parts & kDown ? downBytes(s) : 0) +
                  (row.parts & kUp ? upBytes(s) : 0));
    const double cost = median(row.t);
    // vs_base: the side's GB/s over the base's in the same pass (median
    // over the rounds of bytes ratio / time ratio).
    const double bytesRatio = double(bytes) / double(baseBytes);
    std::printf(" \"%s\": {\"mb\": %.1f, \"ms_per_token\": %.3f, \"gb_s\": "
                "%.2f, \"vs_base\": %.3f}%s\n",
                row.name, bytes * 1e-6, 1e3 * cost, bytes * gb / cost,
                bytesRatio / median(row.ratio),
                i + 1 < rows.size() ? "," : "}");
  }
  return sink == 12345.f ? 1 : 0;
}

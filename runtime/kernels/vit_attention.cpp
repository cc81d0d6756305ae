// ViT attention entry point: checks the arguments, lays out the call's
// geometry, picks the instruction-set path, splits work items across the
// thread pool and takes the registers' mean over windows.
#include "kernels/vit_attention.h"

#include "kernels/vit_attention_impl.h"
#include "base/ThreadPool.h"

#include <cassert>
#include <vector>

namespace fm::kernels {
namespace detail {
namespace {

// The portable traits: a "register" of 8 floats with element-wise loops
// (two SSE registers on baseline x86-64, NEON on AArch64).
struct GenericSimd {
  static constexpr int kLanes = 8;
  struct Reg {
    float v[kLanes];
  };
  static Reg zero() {
    Reg r;
    for (int l = 0; l < kLanes; ++l)
      r.v[l] = 0.0f;
    return r;
  }
  static Reg broadcast(float x) {
    Reg r;
    for (int l = 0; l < kLanes; ++l)
      r.v[l] = x;
    return r;
  }
  static Reg fma(Reg a, Reg b, Reg c) {
    for (int l = 0; l < kLanes; ++l)
      c.v[l] += a.v[l] * b.v[l];
    return c;
  }
  static Reg load(const float *p) {
    Reg r;
    for (int l = 0; l < kLanes; ++l)
      r.v[l] = p[l];
    return r;
  }
  static void store(float *p, Reg r) {
    for (int l = 0; l < kLanes; ++l)
      p[l] = r.v[l];
  }
};

struct GenericTag {
  static constexpr int kLanes = 8;
  static constexpr int kMR = 4, kNVMax = 2;
  using Simd = GenericSimd;
};

} // namespace

const VitRangeFn kVitAttentionGeneric = &VitAttentionKernel<GenericTag>::range;

} // namespace detail

namespace {

using detail::VitGeometry;

// Below this many multiply-adds a call runs on the calling thread.
constexpr int64_t kMinParallelWork = 1 << 16;

detail::VitRangeFn rangeFor(KernelIsa isa) {
  assert(kernelIsaAvailable(isa) && "vit attention path not available");
#if defined(FM_KERNELS_X86)
  if (isa == KernelIsa::Avx512 && kernelIsaAvailable(isa))
    return detail::kVitAttentionAvx512;
  if (isa == KernelIsa::Avx2 && kernelIsaAvailable(isa))
    return detail::kVitAttentionAvx2;
#endif
  (void)isa;
  return detail::kVitAttentionGeneric;
}

VitGeometry geometry(const VitAttentionArgs &a) {
  VitGeometry g{};
  g.qkv = a.qkv;
  g.relH = a.relPosH;
  g.relW = a.relPosW;
  g.padQkv = a.padQkv;
  g.out = a.out;
  g.R = a.registers;
  g.gh = a.gridH;
  g.gw = a.gridW;
  g.H = a.H;
  g.D = a.D;
  g.C = a.H * a.D;
  g.ldQkv = a.ldQkv ? a.ldQkv : 3 * g.C;
  g.ldOut = a.ldOut ? a.ldOut : g.C;
  g.scale = a.scale;
  g.rel = a.relPosH != nullptr;
  g.window = a.window;
  if (a.window > 0) {
    g.windowsY = (a.gridH + a.window - 1) / a.window;
    g.windowsX = (a.gridW + a.window - 1) / a.window;
    g.Sh = g.Sw = a.window;
  } else {
    g.windowsY = g.windowsX = 1;
    g.Sh = a.gridH;
    g.Sw = a.gridW;
  }
  g.keys = g.R + g.Sh * g.Sw;
  g.keysPad = detail::vitRoundUp(g.keys);
  g.relHPad = g.rel ? detail::vitRoundUp(2 * g.Sh - 1) : 0;
  g.relWPad = g.rel ? detail::vitRoundUp(2 * g.Sw - 1) : 0;
  g.columns = g.keysPad + g.relHPad + g.relWPad;
  g.dPad = detail::vitRoundUp(g.D);
  // Equal blocks of at most 64 queries per (window, head).
  const int64_t maxQueries = g.keys;
  g.queryBlocks = (maxQueries + 63) / 64;
  g.queryBlock = (maxQueries + g.queryBlocks - 1) / g.queryBlocks;
  return g;
}

/// A grow-only float buffer of the calling thread.
float *threadBuffer(int which, int64_t floats) {
  thread_local std::vector<float> buffers[2];
  std::vector<float> &b = buffers[which];
  if (int64_t(b.size()) < floats)
    b.resize(static_cast<size_t>(floats));
  return b.data();
}

} // namespace

int64_t vitAttentionFlops(const VitAttentionArgs &a) {
  const VitGeometry g = geometry(a);
  const int64_t relCols = g.rel ? (2 * g.Sh - 1) + (2 * g.Sw - 1) : 0;
  // Every real patch is a query once, every register once per window.
  const int64_t queries = g.gh * g.gw + g.R * g.windowsY * g.windowsX;
  return queries * g.H * g.D * (2 * g.keys + relCols);
}

void vitAttentionOn(KernelIsa isa, const VitAttentionArgs &a,
                    fm::rt::ThreadPool *pool) {
  assert(a.qkv && a.out && "vitAttention: null buffer");
  assert(a.H > 0 && a.D > 0 && a.registers >= 0 && a.window >= 0);
  assert(a.gridH > 0 && a.gridW > 0 && "vitAttention: empty grid");
  assert((a.relPosH == nullptr) == (a.relPosW == nullptr) &&
         "vitAttention: one rel-pos table without the other");
  assert((!a.ldQkv || a.ldQkv >= 3 * a.H * a.D) && (!a.ldOut || a.ldOut >= a.H * a.D));
  VitGeometry g = geometry(a);
  assert(g.queryBlock <= detail::VitAttentionKernel<detail::GenericTag>::kMaxQueries);
  const int64_t windows = g.windowsY * g.windowsX;
  if (g.window > 0 && g.R > 0)
    g.registerOut = threadBuffer(0, windows * g.R * g.C);

  const detail::VitRangeFn range = rangeFor(isa);
  const int64_t items = windows * g.H * g.queryBlocks;
  const int threads = pool && vitAttentionFlops(a) >= kMinParallelWork
                          ? pool->numThreads()
                          : 1;
  const int64_t scratchFloats = detail::vitScratchFloats(g);
  auto run = [&](int64_t begin, int64_t end) {
    // The scratch belongs to the thread that runs the chunk; a buffer kept
    // per thread, so that the pool's persistent workers allocate once.
    thread_local std::vector<float> scratch;
    if (int64_t(scratch.size()) < scratchFloats)
      scratch.resize(static_cast<size_t>(scratchFloats));
    detail::VitScratch sc;
    sc.keyT = scratch.data();
    sc.values = sc.keyT + g.D * g.columns;
    sc.scores = sc.values + g.keys * g.dPad;
    sc.outRows = sc.scores + g.queryBlock * g.columns;
    range(g, begin, end, sc);
  };
  if (threads > 1) {
    // One contiguous chunk of items per thread: consecutive items share a
    // (window, head) and its gathered keys.
    pool->parallelFor(threads, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        auto [b, e] = fm::rt::ThreadPool::chunk(items, threads, int(t));
        if (b < e)
          run(b, e);
      }
    });
  } else {
    run(0, items);
  }

  if (g.window > 0 && g.R > 0) {
    // Register-Window: each register's output is its mean over all
    // windows, padded ones included, summed in window order.
    const float n = static_cast<float>(windows);
    for (int64_t r = 0; r < g.R; ++r) {
      float *dst = g.out + r * g.ldOut;
      for (int64_t c = 0; c < g.C; ++c) {
        float sum = 0.0f;
        for (int64_t w = 0; w < windows; ++w)
          sum += g.registerOut[(w * g.R + r) * g.C + c];
        dst[c] = sum / n;
      }
    }
  }
}

void vitAttention(const VitAttentionArgs &a, fm::rt::ThreadPool *pool) {
  static const KernelIsa isa =
      kernelIsaBest() == KernelIsa::Neon ? KernelIsa::Generic : kernelIsaBest();
  vitAttentionOn(isa, a, pool);
}

} // namespace fm::kernels
